// dsh-sim's host for the published DSH *route*: DSH's own plugins composed in one Cordis app
// the way DSH's persisted runtimes compose them (session store, JSONL persistence, checkpoint
// policy, LLM runtime, system prompt, tools, approval, agents, agent loop), with four things
// supplied by the simulator and nothing of DSH patched:
//   - the file system: SimFS, through the loader hook (hooks.mjs, route mode);
//   - time: @sinonjs/fake-timers (Date, setTimeout, setInterval), advanced only by this host
//     when the app has nothing left to do but wait — the 200 ms write-behind window included;
//   - the model: an `llm` adapter that asks the simulator for the scenario's next response;
//   - the world: tools whose bodies act on the simulator's world and ledger (route-world.mjs).
// Crash points sit outside DSH's code: Cordis interceptors around `agent/pre-step`,
// `llm/stream`, `tools/execute` and `agent/post-step`, a `session/event` observer, and every
// SimFS operation. At each, the host asks the simulator synchronously; a crash is the
// simulator killing this process while it waits for the answer.
//
// Usage: node route-host.mjs <install-home>
// Requests: one JSON line each on fd 0; replies and callbacks on $DSH_SIM_BRIDGE_FD.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createHash } from "node:crypto";
import { setImmediate as realImmediate } from "node:timers";
import { call, readLine, send } from "./channel.mjs";

const home = process.argv[2];
(await import("./hooks.mjs")).install({ route: true });
const require = createRequire(join(home, "package.json"));
const load = (name) => import(pathToFileURL(require.resolve(name)).href);

for (const level of ["log", "info", "warn", "debug"]) console[level] = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");

const FakeTimers = (await load("@sinonjs/fake-timers")).default;
const START = Date.UTC(2026, 0, 1);
const clock = FakeTimers.install({ now: START, toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date"] });

// Deterministic ids: sha256(seed, lifetime, n) shaped as a v4 UUID.
let uuidSeed = "unset";
let uuidCount = 0;
globalThis.__dshSimUuid = () => {
	const h = createHash("sha256").update(`${uuidSeed}:${uuidCount++}`).digest("hex");
	return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
};
Object.defineProperty(globalThis.crypto, "randomUUID", { value: globalThis.__dshSimUuid, configurable: true });

const { Context } = await load("@deepseek-ai/cordis");
const session = await load("@deepseek-ai/dsh-session");
const { JsonlSessionPersistence } = await load("@deepseek-ai/dsh-session-persistence-jsonl");
const checkpointPolicy = await load("@deepseek-ai/dsh-session-checkpoint-policy");
const { AgentLoop } = await load("@deepseek-ai/dsh-agent-loop");
const { AgentRegistry } = await load("@deepseek-ai/dsh-agent");
const llm = await load("@deepseek-ai/dsh-llm");
const tools = await load("@deepseek-ai/dsh-tools");
const { SystemPrompt } = await load("@deepseek-ai/dsh-system-prompt");
const { ApprovalService } = await load("@deepseek-ai/dsh-user-approval");
const { worldTools } = await import("./route-world.mjs");

const PACKAGES = [
	"@deepseek-ai/dsh-agent-loop",
	"@deepseek-ai/dsh-session-checkpoint-policy",
	"@deepseek-ai/dsh-tools",
	"@deepseek-ai/dsh-user-approval",
	"@deepseek-ai/dsh-agent",
	"@deepseek-ai/dsh-llm",
	"@deepseek-ai/dsh-system-prompt",
	"@deepseek-ai/dsh-session",
	"@deepseek-ai/dsh-session-persistence-jsonl",
	"@deepseek-ai/cordis",
	"@sinonjs/fake-timers",
];
const versions = Object.fromEntries(PACKAGES.map((name) => [name, require(`${name}/package.json`).version]));

/** Ask the simulator at a named point; it answers (go on) or kills this process. */
function point(name, details) {
	call({ cb: "point", name, details });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The scripted model: each stream asks the simulator for the scenario's next response. */
class ScriptedModel extends llm.LlmAdapter {
	async *stream(options) {
		const r = call({ cb: "model", messages: options.messages.length }).value;
		const delay = r.chunkDelay ?? 10;
		let index = 0;
		if (r.text) {
			await sleep(delay);
			yield { type: "block-start", index, blockType: "text" };
			yield { type: "text-delta", index, text: r.text };
			yield { type: "block-end", index, block: { type: "text", text: r.text } };
			index += 1;
		}
		for (const c of r.calls) {
			await sleep(delay);
			yield { type: "block-start", index, blockType: "tool-call" };
			yield { type: "tool-call-delta", index, id: c.id, name: c.name, argumentsDelta: c.arguments };
			yield { type: "block-end", index, block: { type: "tool-call", id: c.id, name: c.name, arguments: c.arguments } };
			index += 1;
		}
		await sleep(delay);
		const kind = r.finish ?? (r.calls.length ? "tool-calls" : "stop");
		yield { type: "finish", reason: { kind } };
	}
}

/** The interceptors: outer ones run before DSH's checkpoint policy, inner ones inside it. */
function outerPoints(ctx) {
	ctx.on("agent/pre-step", async (args, next) => {
		point("route.pre_step", {});
		return next();
	}, { prepend: true });
	ctx.on("agent/post-step", async (args, next) => {
		point("route.post_step", {});
		return next();
	}, { prepend: true });
	ctx.on("tools/execute", async (exec, next) => {
		point("route.tools.execute", { call_id: exec.callId, tool: exec.name, nested: exec.parent !== undefined });
		return next();
	}, { prepend: true });
}

function innerPoints(ctx) {
	ctx.on("llm/stream", (options, next) => {
		return (async function* () {
			point("route.llm.request", {});
			yield* next();
		})();
	});
	ctx.on("tools/execute", async (exec, next) => {
		point("route.tools.body", { call_id: exec.callId, tool: exec.name, nested: exec.parent !== undefined });
		return next();
	});
}

const APPENDED = {
	"turn/start": "route.turn.start",
	"turn/end": "route.turn.end",
	"assistant/message": "route.assistant.appended",
	"tool/call": "route.tool_call.appended",
	"tool/result": "route.tool_result.appended",
};

let app;

function errorJson(error) {
	if (!(error instanceof Error)) return { name: "NonError", message: String(error) };
	const out = { name: error.name, message: error.message };
	if (error.code !== undefined) out.code = String(error.code);
	if (error.cause instanceof Error) out.cause = `${error.cause.name}: ${error.cause.message}`;
	return out;
}

async function loadPlugin(ctx, path) {
	const module = await import(pathToFileURL(path).href);
	await ctx.plugin(module.default ?? module, {});
}

async function start(req) {
	uuidSeed = `${req.seed}:${req.lifetime}`;
	uuidCount = 0;
	if (req.now != null) clock.setSystemTime(req.now);
	const ctx = new Context();
	const state = { ctx, turnEnded: 0, events: 0, failures: [] };
	outerPoints(ctx);
	await ctx.plugin(session.SessionStore);
	await ctx.plugin(JsonlSessionPersistence, { root: req.root, compression: req.compression });
	await ctx.plugin(llm.LlmRuntime);
	await ctx.plugin(SystemPrompt);
	await ctx.plugin(tools.ToolRuntime);
	await ctx.plugin(ApprovalService);
	await ctx.plugin(AgentRegistry);
	await ctx.plugin(AgentLoop, { agents: [], maxParallelToolCalls: req.maxParallel ?? 10 });
	// "none": persistence without the policy (valid in DSH; a crash may lose the window)
	if (req.policy === "none") {
	} else if (req.policy) await loadPlugin(ctx, req.policy);
	else await ctx.plugin(checkpointPolicy);
	innerPoints(ctx);
	ctx.on("session/event", (_session, event) => {
		state.events = event.seq + 1;
		if (event.type === "turn/end") state.turnEnded += 1;
		const name = APPENDED[event.type];
		if (name !== undefined) point(name, { seq: event.seq, call_id: event.data?.callId ?? event.data?.toolCallId, turn: event.data?.turn });
	});
	ctx.on("approval/request", async (request, next) => {
		// the scenario's next answer; with none scripted the simulated user is absent
		return call({ cb: "approval", tool: request.toolName, call_id: request.callId }).value ?? next();
	});
	ctx.llm.registerAdapter(["sim"], new ScriptedModel());
	if (req.tools) await loadPlugin(ctx, req.tools);
	else worldTools(ctx, { forwardKey: true });
	for (const extra of req.extra ?? []) await loadPlugin(ctx, extra);
	await settleMicrotasks();
	const agentOptions = { provider: "sim", model: "scripted" };
	const handle = req.resume
		? await ctx.agents.resume({ resumeSessionId: req.sessionId, agentOptions })
		: await ctx.agents.create({ sessionId: req.sessionId, meta: { cwd: req.cwd }, agentOptions });
	state.handle = handle;
	state.agent = handle.agent;
	state.events = handle.agent.session.log?.length ?? state.events;
	app = state;
	return { events: state.events, now: Date.now() };
}

async function settleMicrotasks() {
	for (let i = 0; i < 3; i++) await new Promise((resolve) => realImmediate(resolve));
}

/** Run the app until `done()`, advancing virtual time only when nothing else can happen. */
async function drive(done, limitMs) {
	const deadline = Date.now() + limitMs;
	for (;;) {
		await settleMicrotasks();
		if (done()) return true;
		if (clock.countTimers() === 0 || clock.now >= deadline) return false;
		await clock.nextAsync();
	}
}

async function prompt(req) {
	const before = app.turnEnded;
	app.agent.followup(llm.createUserMessage({ content: [{ type: "text", text: req.text }], source: { kind: "user" } }));
	const ended = await drive(() => app.turnEnded > before && app.agent.status === "idle", req.horizonMs ?? 600_000);
	const last = app.agent.session.log.at(-1);
	return { ended, events: app.events, now: Date.now(), reason: last?.type === "turn/end" ? last.data.reason.kind : null };
}

async function settle(req) {
	// the write-behind window and any other timer the app set, as virtual time passes
	const until = Date.now() + (req.ms ?? 1000);
	await drive(() => clock.countTimers() === 0, req.ms ?? 1000);
	if (Date.now() < until) clock.setSystemTime(until);
	return { events: app.events, now: Date.now() };
}

/** Explore: a fresh app on whatever disk the simulator now serves, resumed with DSH's repair,
 * settled and stopped — one crash state's recovery, without a process start per state. */
async function recover(req) {
	clock.reset();
	await start({ ...req, resume: true });
	await settle({ ms: 5000 });
	return OPS.stop();
}

const OPS = {
	hello: async () => ({ node: process.version, versions, formatVersion: session.SESSION_FORMAT_VERSION }),
	start,
	recover,
	prompt,
	settle,
	flush: async () => {
		await app.ctx.sessions.flush(app.agent.session);
		return { events: app.events };
	},
	stop: async () => {
		await app.ctx.sessions.flush(app.agent.session);
		await app.handle.dispose();
		await settleMicrotasks();
		return { events: app.events, now: Date.now() };
	},
};

for (;;) {
	const line = readLine();
	if (line === undefined) break;
	const req = JSON.parse(line);
	const op = OPS[req.op];
	let reply;
	try {
		reply = op === undefined ? { ok: false, error: { name: "ProtocolError", message: `unknown op ${req.op}` } } : { ok: true, value: await op(req) };
	} catch (error) {
		reply = { ok: false, error: errorJson(error) };
	}
	send({ rid: req.rid ?? null, ...reply });
}
process.exit(0);
