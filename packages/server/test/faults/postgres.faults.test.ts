import { defineFaultSuite } from "./scenarios.ts";

defineFaultSuite("postgres");
