// Serves a request handler on a loopback port and closes it again, for the facilitator and merchants.
import { createServer, type RequestListener } from "node:http";

export type Listening = { url: string; port: number; close(): Promise<void> };

/** How long close() lets in-flight requests finish before cutting their connections. */
const CLOSE_GRACE_MS = 2_000;

/** Listens on 127.0.0.1 (port 0 = any free port) and resolves once the port is bound. */
export function listenOnLoopback(handler: RequestListener, port = 0): Promise<Listening> {
  const server = createServer(handler);
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      const address = server.address();
      if (address === null || typeof address === "string") {
        reject(new Error(`unexpected server address ${String(address)}`));
        return;
      }
      let closing: Promise<void> | undefined;
      const close = () =>
        (closing ??= new Promise<void>((done) => {
          const timer = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
          server.close(() => {
            clearTimeout(timer);
            done();
          });
          server.closeIdleConnections();
        }));
      resolve({ url: `http://127.0.0.1:${address.port}`, port: address.port, close });
    });
  });
}
