import { it } from "vitest";
import { checkRaceProperty, fuzzSettings, propertyName } from "./property.js";

const settings = fuzzSettings();

it(propertyName("custom"), () => checkRaceProperty("custom", settings), settings.timeLimitMs + 20_000);
