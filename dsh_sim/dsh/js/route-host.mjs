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
// `llm/stream`, `tools/execute` and `agent/turn-stopping` (rc.8 has no `agent/post-step`), a
// `session/event` observer, and every
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

/** Ask the simulator at a named point; it answers — go on, cancel the turn, wait, fail the
 * tool body — or kills this process while it waits. From a `session/event` observer the
 * cancel waits for the append to finish publishing (`defer`): DSH refuses a session append
 * (the inbox splice a cancel writes) inside another one's publication. */
function point(name, details, { defer = false } = {}) {
	const reply = call({ cb: "point", name, details });
	if (reply.cancel) {
		const cancel = () => app?.agent?.cancel({ kind: "user" });
		if (defer) queueMicrotask(cancel);
		else cancel();
	}
	return reply;
}

/** At an interceptor: the point's answer applied (a delay waits on the virtual clock). */
async function pointAsync(name, details) {
	const reply = point(name, details);
	if (reply.delayMs) await sleep(reply.delayMs);
	return reply;
}

function injectedFailure([message, name, code]) {
	const error = new Error(message);
	error.name = name;
	error.code = code;
	return error;
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
		await pointAsync("route.pre_step", { turn: args.turn, step: args.step });
		return next();
	}, { prepend: true });
	// (the agent/post-step is not in the published 0.1.0-rc.8: its step-end checkpoint is
	// agent/turn-stopping, a serial event after a step that would end the turn)
	ctx.on("agent/turn-stopping", async (args) => {
		await pointAsync("route.turn_stopping", { turn: args.turn });
	}, { prepend: true });
	ctx.on("tools/execute", async (exec, next) => {
		await pointAsync("route.tools.execute", { call_id: exec.callId, tool: exec.name, nested: exec.parent !== undefined });
		return next();
	}, { prepend: true });
}

function innerPoints(ctx) {
	ctx.on("llm/stream", (options, next) => {
		return (async function* () {
			await pointAsync("route.llm.request", {});
			yield* next();
		})();
	});
	ctx.on("tools/execute", async (exec, next) => {
		const reply = await pointAsync("route.tools.body", { call_id: exec.callId, tool: exec.name, nested: exec.parent !== undefined });
		if (reply.fail) throw injectedFailure(reply.fail);
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

/** A Cordis plugin from a file (a replacement policy or tools plugin, an extra one); its
 * config names the install home, so it can load the pinned packages itself. */
async function loadPlugin(ctx, path) {
	const module = await import(pathToFileURL(path).href);
	await ctx.plugin(module.default ?? module, { home });
}

async function start(req) {
	uuidSeed = `${req.seed}:${req.lifetime}`;
	uuidCount = 0;
	if (req.now != null) clock.setSystemTime(req.now);
	const ctx = new Context();
	const state = { ctx, turnEnded: 0, events: 0, failures: [] };
	app = state; // points announced while the app starts (a resume's repair) see this app
	outerPoints(ctx);
	await ctx.plugin(session.SessionStore);
	await ctx.plugin(JsonlSessionPersistence, { root: req.root, compression: req.compression });
	await ctx.plugin(llm.LlmRuntime);
	await ctx.plugin(SystemPrompt);
	await ctx.plugin(tools.ToolRuntime);
	// approval: the deployment's policy (config approval_policy; null: no approval service)
	if (req.approvalPolicy != null) await ctx.plugin(ApprovalService, { policy: req.approvalPolicy });
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
		if (name !== undefined) {
			const data = event.data ?? {};
			point(name, { seq: event.seq, call_id: data.callId ?? data.message?.source?.callId, turn: data.turn, step: data.step }, { defer: true });
		}
	});
	ctx.on("approval/request", async (request, next) => {
		// the scenario's next answer, after the user's thinking time; with none scripted the
		// simulated user is absent; "hang": the user never answers (the request's signal ends it)
		const { answer, delayMs } = call({ cb: "approval", tool: request.toolName, call_id: request.callId }).value;
		if (delayMs) await sleep(delayMs);
		if (answer === "hang") {
			return new Promise((resolve) => {
				if (request.signal?.aborted) resolve("cancelled");
				request.signal?.addEventListener("abort", () => resolve("cancelled"), { once: true });
			});
		}
		return answer ?? next();
	});
	ctx.llm.registerAdapter(["sim"], new ScriptedModel());
	if (req.tools) await loadPlugin(ctx, req.tools);
	else worldTools(ctx, { forwardKey: true, approval: req.approvalTools ?? ["send_message"], cancel: () => app.agent.cancel({ kind: "user" }) });
	for (const extra of req.extra ?? []) await loadPlugin(ctx, extra);
	await settleMicrotasks();
	const agentOptions = { provider: "sim", model: "scripted" };
	const handle = req.resume
		? await ctx.agents.resume({ resumeSessionId: req.sessionId, agentOptions })
		: await ctx.agents.create({ sessionId: req.sessionId, meta: { cwd: req.cwd }, agentOptions });
	state.handle = handle;
	state.agent = handle.agent;
	state.events = handle.agent.session.log?.length ?? state.events;
	return { events: state.events, now: Date.now() };
}

/** Let every promise chain the last step started run to where it waits on a timer or on the
 * simulator: a few real setImmediate rounds (the app's own work is promise-based, and the
 * backend's compression is synchronous under the route host). */
async function settleMicrotasks() {
	for (let i = 0; i < 3; i++) await new Promise((resolve) => realImmediate(resolve));
}

/** The virtual time of the next timer the app set (Infinity: none). */
function nextTimerAt() {
	let at = Infinity;
	const timers = clock.timers instanceof Map ? clock.timers.values() : Object.values(clock.timers ?? {});
	for (const timer of timers) at = Math.min(at, timer.callAt);
	return at;
}

/** Run the app until `done()`, advancing virtual time only when nothing else can happen, and
 * never past `limitMs` from now (a timer due later stays pending: the turn is still running). */
async function drive(done, limitMs) {
	const deadline = Date.now() + limitMs;
	for (;;) {
		await settleMicrotasks();
		if (done()) return true;
		const next = nextTimerAt();
		if (next === Infinity) return false;
		if (next > deadline) {
			clock.tick(Math.max(0, deadline - clock.now)); // no timer is due before the deadline
			await settleMicrotasks();
			return done();
		}
		// fire the next timer synchronously, then settle on real setImmediate rounds only: the
		// *Async variants yield on a real setTimeout(0), whose order against setImmediate is the
		// machine's timing (Node documents it as non-deterministic) — a loaded machine would then
		// interleave the app otherwise
		clock.next();
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
	cancel: async (req) => {
		app.agent.cancel({ kind: "user" });
		return settle({ ms: (req.settle ?? 1) * 1000 });
	},
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
		// a graceful stop: the agent is disposed (a turn in flight ends `disposed`) and the session
		// with it, which drains what the write-behind window holds; virtual time passes meanwhile
		let done = false;
		let failure;
		const work = app.handle.dispose().then(
			() => (done = true),
			(error) => ((failure = error), (done = true)),
		);
		await drive(() => done, 86_400_000);
		if (!done) throw new Error("the stop did not finish within a virtual day (the app waits on nothing the clock can end)");
		await work;
		if (failure !== undefined) throw failure;
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
