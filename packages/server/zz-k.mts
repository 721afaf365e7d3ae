import { keccak256 } from "viem";
const buf = new Uint8Array(36_000).map((_, i) => i & 255);
for (let r = 0; r < 3; r++) {
  const t = performance.now(); for (let i = 0; i < 200; i++) keccak256(buf);
  const ms = (performance.now() - t) / 200;
  console.log("keccak 36KB ms", ms.toFixed(3), "MB/s", (36 / ms).toFixed(1));
}
const hex = "0x" + Buffer.from(buf).toString("hex");
const t = performance.now(); for (let i = 0; i < 200; i++) keccak256(hex as `0x${string}`); console.log("from hex ms", ((performance.now() - t) / 200).toFixed(3));
