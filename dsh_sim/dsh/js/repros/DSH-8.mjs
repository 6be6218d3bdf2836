// DSH-8 — a session whose first publication was killed between link and directory fsync is
// resumed and appended to without its name ever being made durable.
//
// Standalone: only the published packages, the real file system and a real SIGKILL.
//   npm install @deepseek-ai/cordis@4.0.4 @deepseek-ai/dsh-session@0.1.0-rc.8 \
//     @deepseek-ai/dsh-session-persistence-jsonl@0.1.0-rc.8
//   node DSH-8.mjs            (Node 24; or: node DSH-8.mjs <dir holding node_modules>)
//
// 1. A writer creates a session and appends its first turn. Right after DSH hard-links the fsynced temp file to the log's
//    name — before it fsyncs the session directory — the process is SIGKILLed. (The kill is
//    placed by wrapping node:fs/promises.link in the writer; DSH's code is not touched.)
// 2. A fresh process loads (repairs) the session, appends a turn and flushes: its append is
//    acknowledged. Every fsync it makes is recorded.
// Expected: before acknowledging an append to a log it did not publish itself, the resumed
//    writer makes the log's name durable (fsync of the session directory), as it did for a log
//    it created; otherwise a power loss after the acknowledged append removes the whole
//    session (the directory entry was never written to the medium).
// Observed (0.1.0-rc.8): no fsync of the session directory; exit 1. Exit 0 once fixed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import * as fsp from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [role, root, home = process.cwd()] = process.argv.slice(2).length >= 2 ? process.argv.slice(2) : ["main", "", process.argv[2] ?? process.cwd()];
const require = createRequire(join(home, "package.json"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const ID = "dsh-8-session";
const CWD = "/work/dsh-8";
const turn = (n, seq) => [
	{ type: "turn/start", seq, time: 1_700_000_000_000 + seq, data: { turn: n } },
	{ type: "turn/end", seq: seq + 1, time: 1_700_000_000_001 + seq, data: { turn: n, reason: { kind: "completed" } } },
];

async function backend() {
	const { Context } = await load("@deepseek-ai/cordis");
	const { SessionStore } = await load("@deepseek-ai/dsh-session");
	const { JsonlSessionPersistence } = await load("@deepseek-ai/dsh-session-persistence-jsonl");
	const ctx = new Context();
	await ctx.plugin(SessionStore);
	await ctx.plugin(JsonlSessionPersistence, { root, compression: "zstd" });
	return ctx.sessionPersistence;
}

if (role === "writer") {
	const fs = require("node:fs");
	const link = fs.promises.link;
	fs.promises.link = async (src, dst) => {
		await link(src, dst);
		process.kill(process.pid, "SIGKILL"); // after the link, before the directory fsync
	};
	syncBuiltinESMExports();
	const persistence = await backend();
	await persistence.create({ version: 0, id: ID, createdAt: 1_700_000_000_000, cwd: CWD });
	await persistence.append(ID, turn(1, 0)); // the first append publishes the log
	console.log("not killed");
} else if (role === "resume") {
	const fs = require("node:fs");
	const synced = [];
	const open = fs.promises.open;
	fs.promises.open = async (path, ...rest) => {
		const handle = await open(path, ...rest);
		for (const method of ["sync", "datasync"]) {
			const original = handle[method].bind(handle);
			handle[method] = async () => {
				synced.push(String(path));
				return original();
			};
		}
		return handle;
	};
	syncBuiltinESMExports();
	const persistence = await backend();
	const loaded = await persistence.load(ID);
	const n = loaded.events.length;
	await persistence.append(ID, turn(2, n));
	const resumedSyncs = [...synced];
	// control: a session this process publishes itself — its directory fsync must be seen here,
	// or the recording could not see one at all
	await persistence.create({ version: 0, id: `${ID}-control`, createdAt: 1_700_000_000_000, cwd: CWD });
	await persistence.append(`${ID}-control`, turn(1, 0));
	console.log(JSON.stringify({ events: n + 2, synced: resumedSyncs, control: synced.slice(resumedSyncs.length) }));
} else {
	const dir = mkdtempSync(join(tmpdir(), "dsh-8-"));
	const run = (name) => spawnSync(process.execPath, [new URL(import.meta.url).pathname, name, dir, home], { encoding: "utf8" });
	try {
		const writer = run("writer");
		if (writer.signal !== "SIGKILL") throw new Error(`the writer was not killed at the link: ${writer.stdout}${writer.stderr}`);
		const sessionDir = join(dir, readdirSync(dir)[0], ID);
		console.log(`killed after link; ${sessionDir} holds: ${readdirSync(sessionDir).join(", ")}`);
		const resumed = run("resume");
		if (resumed.status !== 0) throw new Error(`resume failed: ${resumed.stderr}`);
		const { events, synced, control } = JSON.parse(resumed.stdout.trim().split("\n").at(-1));
		console.log(`resumed, appended, acknowledged: ${events} events; fsyncs: ${synced.join(", ") || "none"}`);
		if (!control.includes(`${sessionDir}-control`)) throw new Error(`the recording saw no directory fsync for a fresh publication either: ${control}`);
		if (synced.includes(sessionDir)) {
			console.log("EXPECTED: the session directory was fsynced before the append was acknowledged");
			process.exitCode = 0;
		} else {
			console.log(`OBSERVED (DSH-8): ${sessionDir} was never fsynced — the log's name is not durable; a power loss now loses the session`);
			process.exitCode = 1;
		}
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}
