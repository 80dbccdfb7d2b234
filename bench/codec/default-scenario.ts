import { decodeProgram, decodeSpecs, encodeProgram, encodeSpecs } from "../../src";
import { exampleProgram } from "../../src/example";
import { measure, type Policy, type Timing } from "../common/measure";

/** Size and times of one payload of the default scenario. */
export interface PayloadFigures {
  bytes: number;
  encode: Timing;
  decode: Timing;
}

/** `npm start`'s embedded example: its input specs alone, and the whole program. */
export interface DefaultScenario {
  description: string;
  inputSpecs: PayloadFigures;
  program: PayloadFigures;
}

/** Measures the default scenario in TypeScript, with the policy of every other measurement. */
export function measureDefaultScenario(policy: Policy): DefaultScenario {
  const program = exampleProgram();
  const { treedef, leaves } = program.inputs;
  const specs = measure(() => encodeSpecs(treedef, leaves), policy);
  const whole = measure(() => encodeProgram(program), policy);
  return {
    description:
      "the example program of `npm start`: 1,000 leaves (1024×512 float32) in 250 layer dicts on a 128×8 mesh of 1,024 devices, four NamedShardings",
    inputSpecs: {
      bytes: specs.result.length,
      encode: specs.timing,
      decode: measure(() => decodeSpecs(specs.result), policy).timing,
    },
    program: {
      bytes: whole.result.length,
      encode: whole.timing,
      decode: measure(() => decodeProgram(whole.result), policy).timing,
    },
  };
}
