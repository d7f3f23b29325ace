import { it } from "vitest";
import { checkRaceProperty, fuzzSettings, propertyName } from "./property.js";

const settings = fuzzSettings();

it(
  propertyName("plan-execute"),
  () => checkRaceProperty("plan-execute", settings),
  settings.timeLimitMs + 20_000,
);
