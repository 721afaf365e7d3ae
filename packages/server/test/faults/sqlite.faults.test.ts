import { defineFaultSuite } from "./scenarios.ts";

defineFaultSuite("sqlite");
