// The simulated world's tools for the DSH route host, as DSH tool definitions.
//
// Each body is one request to the simulator's world (its ledger is the ground truth the
// verdicts are judged against): `deliver` (the request leaves; a crash point before any
// effect), the request's travel time on the virtual clock, `apply` (the service acts and the
// ledger records it; the response's crash point follows), the response's travel time. Keyed
// services get the call's idempotency key: the arguments' `idempotency_key`, else DSH's
// `exec.callId` — what DSH's checkpoint-policy README asks side-effecting tools to forward.
import { call } from "./channel.mjs";

// name -> its own answer to "may this call run beside others?", as dsh-sim's world tools answer
// (dsh_sim.adapters.world_tools.declared_concurrency_safe): get_balance looks at the account it
// would read and throws without one; lookup_payment says true for an object and otherwise hands
// back what it was given; the others are exclusive. DSH runs a call in parallel only on `true`.
const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
export const WORLD_TOOLS = {
	pay: undefined,
	pay_legacy: undefined,
	send_message: undefined,
	get_balance: (args) => {
		if (!isObject(args) || !Object.hasOwn(args, "account")) throw new TypeError("get_balance: no account to read");
		return typeof args.account === "string";
	},
	lookup_payment: (args) => (isObject(args) ? true : args),
	write_note: undefined,
};

// A request's travel time on the virtual clock. The body does not watch its signal: once
// dispatched it runs to the end, as dsh-sim's world tools do under its runtime (a cancelled
// turn does not recall a request on the wire; DSH then reports the call ABORTED).
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class WorldToolError extends Error {
	constructor(message, code) {
		super(message);
		this.name = "NetworkError";
		this.code = code;
	}
}

async function request(name, args, exec, forwardKey, cancel) {
	const object = typeof args === "object" && args !== null && !Array.isArray(args);
	const key = forwardKey ? (object && args.idempotency_key) || exec.callId : undefined;
	const fields = { tool: name, args, call_id: exec.callId, key: key ?? null };
	const delivered = call({ cb: "world", phase: "deliver", ...fields }).value;
	if (delivered.cancel) cancel();
	await sleep(delivered.latencyMs);
	if (delivered.error) throw new WorldToolError(delivered.error, "NETWORK_ERROR");
	const applied = call({ cb: "world", phase: "apply", ...fields }).value;
	if (applied.cancel) cancel();
	await sleep(applied.latencyMs);
	if (applied.error) throw new WorldToolError(applied.error, "NETWORK_ERROR");
	return applied.text;
}

/** Register the world tools on `ctx`; `forwardKey: false` is a tool plugin that drops the key.
 * `approval`: the tools that ask the user first (config approval_tools); `cancel` cancels the
 * agent's turn (a cancel fault at a world point). */
export function worldTools(ctx, { forwardKey = true, approval = ["send_message"], cancel = () => {} } = {}) {
	for (const [name, classify] of Object.entries(WORLD_TOOLS)) {
		ctx.tools.register({
			name,
			description: `${name} over the simulated world`,
			parameters: { type: "object", properties: {}, additionalProperties: true },
			output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
			...(classify ? { isConcurrencySafe: classify } : {}),
			execute: (args, exec) => request(name, args ?? {}, exec, forwardKey, () => cancel(exec)),
		});
		if (approval.includes(name)) {
			ctx.on("tools/pre-execute", async (exec, next) => {
				if (exec.name === name) return { kind: "ask", reason: `${name} needs the user's approval` };
				return next();
			});
		}
	}
}
