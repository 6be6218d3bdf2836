// node:zlib as the DSH JSONL backend sees it inside the route host: the asynchronous zstd
// calls run synchronously and answer in a microtask. On the libuv thread pool they would
// finish in real time, between the simulator's virtual-clock steps, and the order of a
// compression against a fake timer would depend on the machine's load.
import * as real from "node:zlib";

const settle = (work, callback) => {
	let result;
	try {
		result = work();
	} catch (error) {
		queueMicrotask(() => callback(error));
		return;
	}
	queueMicrotask(() => callback(null, result));
};

export function zstdCompress(buffer, options, callback) {
	if (typeof options === "function") [options, callback] = [{}, options];
	settle(() => real.zstdCompressSync(buffer, options), callback);
}
export function zstdDecompress(buffer, options, callback) {
	if (typeof options === "function") [options, callback] = [{}, options];
	settle(() => real.zstdDecompressSync(buffer, options), callback);
}
export const { constants, createZstdDecompress, zstdDecompressSync, zstdCompressSync } = real;
export default { ...real, zstdCompress, zstdDecompress };
