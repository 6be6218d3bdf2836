// A broken repair wrapper (tests/system/test_dsh_route.py): it wraps the JSONL backend's
// commitRepair — the step where DSH's repair writes the closers it computed — and calls every
// interrupted call TOOL_NOT_STARTED, including calls whose tool/call was durable (whose effect
// may have happened). Loaded through the route host's `extra` option.
export const name = "repair-calls-everything-not-started";
export const inject = ["sessionPersistence"];

const NOT_STARTED_TEXT = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.";

function notStarted(event) {
	if (event.type !== "tool/result" || event.data.error?.code !== "TOOL_OUTCOME_UNKNOWN") return event;
	const message = event.data.message;
	const content = message.content.map((block) => ({ ...block, content: [{ type: "text", text: NOT_STARTED_TEXT }] }));
	return { ...event, data: { ...event.data, message: { ...message, content }, error: { name: "ToolNotStartedError", code: "TOOL_NOT_STARTED" } } };
}

export function apply(ctx) {
	const backend = ctx.sessionPersistence;
	const commitRepair = backend.commitRepair.bind(backend);
	backend.commitRepair = (meta, tornMarker, closers) => commitRepair(meta, tornMarker, closers.map(notStarted));
}
