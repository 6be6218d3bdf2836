// dsh-sim's long-lived bridge to the published DSH JSONL backend.
//
// Usage: node bridge.mjs <install-home> [--simfs]
// One JSON request per line on fd 0, one JSON reply per line on $DSH_SIM_BRIDGE_FD. With
// --simfs, the backend's node:fs / node:fs/promises / node:crypto are SimFS shims that ask the
// simulator (same channel) for every operation, so its writes land on the simulated disk.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { readLine, send } from "./channel.mjs";

const home = process.argv[2];
const simfs = process.argv.includes("--simfs");
if (simfs) (await import("./hooks.mjs")).install();

const require = createRequire(join(home, "package.json"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);
const { Context } = await load("@deepseek-ai/cordis");
const session = await load("@deepseek-ai/dsh-session");
const { JsonlSessionPersistence } = await load("@deepseek-ai/dsh-session-persistence-jsonl");
const versions = Object.fromEntries(
	["@deepseek-ai/dsh-session-persistence-jsonl", "@deepseek-ai/dsh-session-persistence", "@deepseek-ai/dsh-session", "@deepseek-ai/dsh-invariants", "@deepseek-ai/cordis"].map(
		(name) => [name, require(`${name}/package.json`).version],
	),
);

// Console output from the packages goes to stderr: stdout is not the protocol, but keep it quiet.
for (const level of ["log", "info", "warn", "debug"]) console[level] = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");

const backends = new Map();

async function mount(root, compression) {
	const ctx = new Context();
	await ctx.plugin(session.SessionStore);
	await ctx.plugin(JsonlSessionPersistence, { root, compression });
	return ctx;
}

function errorJson(error) {
	if (!(error instanceof Error)) return { name: "NonError", message: String(error) };
	const out = { name: error.name, message: error.message };
	if (error.code !== undefined) out.code = String(error.code);
	if (error.cause instanceof Error) out.cause = `${error.cause.name}: ${error.cause.message}`;
	if (error instanceof AggregateError) out.errors = error.errors.map(errorJson);
	return out;
}

async function settle(fn) {
	try {
		return { ok: true, value: await fn() };
	} catch (error) {
		return { ok: false, error: errorJson(error) };
	}
}

async function backend(req) {
	let ctx = req.key === undefined ? undefined : backends.get(req.key);
	if (ctx === undefined) {
		ctx = await mount(req.root, req.compression);
		if (req.key !== undefined) backends.set(req.key, ctx);
	}
	return ctx.sessionPersistence;
}

// The read-side differential: each step on a fresh backend instance (no shared caches), in the
// order a user would meet them; load commits the repair, the second load must find nothing to do.
async function probe(req) {
	const fresh = () => mount(req.root, req.compression).then((ctx) => ctx.sessionPersistence);
	const out = {};
	out.list = await settle(async () => (await fresh()).list());
	const id = req.session ?? (out.list.ok && out.list.value.length === 1 ? out.list.value[0].id : undefined);
	if (id === undefined) return { ...out, id: null };
	out.readFrom = await settle(async () => (await (await fresh()).readFrom(id, 0)).events);
	out.inspect = await settle(async () => (await (await fresh()).inspect(id)).events);
	out.load = await settle(async () => (await (await fresh()).load(id)).events);
	out.reload = await settle(async () => (await (await fresh()).load(id)).events);
	return { ...out, id };
}

const OPS = {
	hello: async () => ({ node: process.version, versions, simfs, formatVersion: session.SESSION_FORMAT_VERSION }),
	probe,
	closers: async (req) => session.interruptedTurnClosers(req.events),
	create: async (req) => (await backend(req)).create(req.meta),
	append: async (req) => (await backend(req)).append(req.session, req.events),
	load: async (req) => (await (await backend(req)).load(req.session)).events,
	inspect: async (req) => (await (await backend(req)).inspect(req.session)).events,
	readFrom: async (req) => (await (await backend(req)).readFrom(req.session, req.fromSeq ?? 0)).events,
	list: async (req) => (await backend(req)).list(),
	close: async (req) => {
		backends.delete(req.key);
		return null;
	},
};

for (;;) {
	const line = readLine();
	if (line === undefined) break;
	let req;
	try {
		req = JSON.parse(line);
	} catch {
		send({ rid: null, ok: false, error: { name: "ProtocolError", message: "request is not JSON" } });
		continue;
	}
	const op = OPS[req.op];
	const reply = op === undefined ? { ok: false, error: { name: "ProtocolError", message: `unknown op ${req.op}` } } : await settle(() => op(req));
	send({ rid: req.rid ?? null, ...reply });
}
process.exit(0);
