import { it } from "vitest";
import { checkRaceProperty, fuzzSettings, propertyName } from "./property.js";

const settings = fuzzSettings();

it(
  propertyName("sequential"),
  () => checkRaceProperty("sequential", settings),
  settings.timeLimitMs + 20_000,
);
