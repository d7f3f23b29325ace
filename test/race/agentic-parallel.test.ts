import { it } from "vitest";
import { checkRaceProperty, fuzzSettings, propertyName } from "./property.js";

const settings = fuzzSettings();

it(propertyName("parallel"), () => checkRaceProperty("parallel", settings), settings.timeLimitMs + 20_000);
