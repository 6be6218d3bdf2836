// A broken replacement for DSH's checkpoint policy (tests/system/test_dsh_route.py): the model
// request and the step boundary are checkpointed as DSH does, but a tool call is flushed
// *after* its body ran — the body can act on the world while its tool/call is still only in
// memory. Loaded with `dsh-sim replay --runtime dsh-route` through the host's `policy` option.
export const name = "session-checkpoint-policy-flush-after-body";
export const inject = ["llm", "sessionPersistence", "sessions", "tools"];

export function apply(ctx) {
	ctx.on("llm/stream", (options, next) => {
		const session = options.sessionId === undefined ? undefined : ctx.sessions.get(options.sessionId);
		if (session === undefined) return next();
		return (async function* () {
			await ctx.sessions.flush(session);
			yield* next();
		})();
	});
	ctx.on("tools/execute", async (exec, next) => {
		const result = await next();
		if (exec.agent !== undefined && exec.parent === undefined) await ctx.sessions.flush(exec.agent.session);
		return result;
	});
	ctx.on("agent/pre-step", async ({ agent }, next) => {
		await ctx.sessions.flush(agent.session);
		return next();
	});
}
