// A broken world-tools plugin (tests/system/test_dsh_route.py): the same tools, but a payment
// reaches its service without the call's idempotency key — a retry after an unknown outcome
// could charge twice. Loaded through the route host's `tools` option.
import { worldTools } from "../../../dsh_sim/dsh/js/route-world.mjs";

export const name = "world-tools-without-keys";
export const inject = ["tools"];

export function apply(ctx) {
	worldTools(ctx, { forwardKey: false });
}
