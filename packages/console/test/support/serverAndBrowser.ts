/**
 * A sandbox server (the test harness: real SQLite, real local chain, real deposits) and Debian's Chromium for the
 * browser tests of one file: started together before its tests; after them the browser is closed, then the server
 * stopped.
 */
import type { Browser } from "playwright-core";
import { type StartTestServerOptions, type TestServer, startTestServer } from "../../../server/src/testing/harness.ts";
import { perFile } from "../../../server/test/support/perFile.ts";
import { launchBrowser } from "./browser.ts";

export function useServerAndBrowser(options: StartTestServerOptions = {}): { server: TestServer; browser: Browser } {
  return perFile(
    async () => {
      const [server, browser] = await Promise.all([startTestServer(options), launchBrowser()]);
      return { server, browser };
    },
    async ({ server, browser }) => {
      await browser.close();
      await server.stop();
    },
  );
}
