// The simulated world's tools for the DSH route host, as DSH tool definitions.
//
// Each body is one request to the simulator's world (its ledger is the ground truth the
// verdicts are judged against): `deliver` (the request leaves; a crash point before any
// effect), the request's travel time on the virtual clock, `apply` (the service acts and the
// ledger records it; the response's crash point follows), the response's travel time. Keyed
// services get the call's idempotency key: the arguments' `idempotency_key`, else DSH's
// `exec.callId` — what DSH's checkpoint-policy README asks side-effecting tools to forward.
import { call } from "./channel.mjs";

// name -> concurrency safe; the same set and kinds as dsh-sim's world tools
export const WORLD_TOOLS = {
	pay: false,
	pay_legacy: false,
	send_message: false,
	get_balance: true,
	lookup_payment: true,
	write_note: false,
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
	for (const [name, safe] of Object.entries(WORLD_TOOLS)) {
		ctx.tools.register({
			name,
			description: `${name} over the simulated world`,
			parameters: { type: "object", properties: {}, additionalProperties: true },
			output: { schema: { type: "string" }, render: (_args, value) => [{ type: "text", text: value }] },
			...(safe ? { isConcurrencySafe: () => true } : {}),
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
