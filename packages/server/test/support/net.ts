/** A free TCP port on loopback (the OS picks it; we release it for the caller to bind). */
import { createServer } from "node:net";

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once("error", fail);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

/** A TCP listener on loopback that only counts the connections it accepts (and closes them): proof a host was never contacted. */
export async function countingListener(): Promise<{ url: string; accepted(): number; close(): Promise<void> }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, accepted: () => accepted, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
