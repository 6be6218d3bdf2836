// node:fs/promises as the DSH backend sees it under the simulator. Every operation is one
// synchronous round trip to SimFS, wrapped in an already-settled promise: the simulator owns
// ordering, time and crash points; the backend's own control flow is untouched.
import { fsCall, makeDirent, makeStats } from "./sim-fs-common.mjs";

const toBuffer = (data) => (typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data.buffer, data.byteOffset, data.byteLength));

class SimFileHandle {
	constructor(fd, path) {
		this.fd = fd;
		this.path = path;
	}
	async writeFile(data) {
		fsCall("write", { fd: this.fd, path: this.path, data: toBuffer(data).toString("base64") });
	}
	async write(data) {
		const buffer = toBuffer(data);
		fsCall("write", { fd: this.fd, path: this.path, data: buffer.toString("base64") });
		return { bytesWritten: buffer.length, buffer: data };
	}
	async sync() {
		fsCall("fsync", { fd: this.fd, path: this.path });
	}
	async datasync() {
		fsCall("fsync", { fd: this.fd, path: this.path });
	}
	async stat(options) {
		return makeStats(fsCall("fstat", { fd: this.fd, path: this.path }), options?.bigint === true);
	}
	async truncate(len = 0) {
		fsCall("ftruncate", { fd: this.fd, path: this.path, size: len });
	}
	async read(buffer, offset = 0, length = buffer.length - offset, position = null) {
		const got = Buffer.from(fsCall("read", { fd: this.fd, path: this.path, size: length, position }), "base64");
		got.copy(buffer, offset);
		return { bytesRead: got.length, buffer };
	}
	async readFile() {
		return Buffer.from(fsCall("readAll", { fd: this.fd, path: this.path }), "base64");
	}
	async close() {
		fsCall("close", { fd: this.fd, path: this.path });
	}
}

export async function open(path, flags = "r", mode = 0o666) {
	return new SimFileHandle(fsCall("open", { path, flags: String(flags), mode }), path);
}
export async function readFile(path, options) {
	options?.signal?.throwIfAborted();
	return Buffer.from(fsCall("readFile", { path }), "base64");
}
export async function stat(path, options) {
	return makeStats(fsCall("stat", { path }), options?.bigint === true);
}
export async function readdir(path, options) {
	const entries = fsCall("readdir", { path });
	return options?.withFileTypes ? entries.map((e) => makeDirent(path, e)) : entries.map((e) => e.name);
}
export async function mkdir(path, options) {
	return fsCall("mkdir", { path, recursive: options?.recursive === true, mode: options?.mode ?? 0o777 }) ?? undefined;
}
export async function link(src, dst) {
	fsCall("link", { src, dst, path: dst });
}
export async function rm(path, options) {
	fsCall("rm", { path, force: options?.force === true });
}
export async function truncate(path, len = 0) {
	fsCall("truncate", { path, size: len });
}
export async function realpath(path) {
	return fsCall("realpath", { path });
}
export async function mkdtemp(prefix) {
	return fsCall("mkdtemp", { path: prefix });
}
export default { open, readFile, stat, readdir, mkdir, link, rm, truncate, realpath, mkdtemp };
