/**
 * S5 and S6, the benchmark's nested trees: a training step's specs as a real program has them.
 * Each is a Blueprint, plain JSON that build-specs.ts builds into TypeScript model objects and
 * jax_bench.py into JAX objects, so both sides encode the same tree from one definition.
 */
import type { DTypeName } from "../../src/index";
import type { SpecEntry } from "./scenarios";

/** A node of a blueprint: None, a leaf (by its index in `leafKinds`) or a container. */
export type TreeShape =
  | null
  | { leaf: number }
  | { list: TreeShape[] }
  | { tuple: TreeShape[] }
  | { dict: Record<string, TreeShape> }
  /** A namedtuple class of bench/codec/training_nodes.py, by "module.QualName", and its fields in order. */
  | { namedtuple: string; fields: Record<string, TreeShape> }
  /**
   * A register_dataclass class of bench/codec/training_nodes.py: its data fields (the children) and
   * its meta fields (the aux data), each in the order the class registers them.
   */
  | { custom: string; data: Record<string, TreeShape>; meta: Record<string, string | number> };

/** What a leaf is: its shape, dtype and which of the blueprint's shardings it has. */
export interface LeafKind {
  shape: number[];
  dtype: DTypeName;
  sharding: number;
}

export interface Blueprint {
  root: TreeShape;
  leafKinds: LeafKind[];
  /** The distinct shardings of the tree's leaves; a leaf kind names one by its index. */
  shardings: SpecEntry[][];
}

/** The module of the Python node classes; names on the wire are "training_nodes.QualName". */
export const NODES_MODULE = "training_nodes";

/** The 3-axis mesh of S5 and S6: 8 × 16 × 8 = 1,024 devices. */
export const TRAINING_MESH = { meshShape: [8, 16, 8], axisNames: ["data", "fsdp", "tensor"] };

/** The shardings of S5 and S6, by role. */
const EMBED: SpecEntry[] = [["data", "fsdp"], "tensor"]; // the embedding table
const IN: SpecEntry[] = ["fsdp", "tensor"]; // a projection into the hidden or MLP width
const OUT: SpecEntry[] = ["tensor", "fsdp"]; // a projection back out of it
const REPLICATED: SpecEntry[] = []; // norm scales, the step count
const TENSOR: SpecEntry[] = ["tensor"]; // a bias over the MLP width (S6)

/** Builds a blueprint's leaf kinds and shardings as leaves ask for them, one index per distinct one. */
class Kinds {
  readonly leafKinds: LeafKind[] = [];
  readonly shardings: SpecEntry[][] = [];
  readonly #index = new Map<string, number>();

  leaf(shape: number[], dtype: DTypeName, spec: SpecEntry[]): TreeShape {
    const key = JSON.stringify([shape, dtype, spec]);
    let i = this.#index.get(key);
    if (i === undefined) {
      const specKey = JSON.stringify(spec);
      let sharding = this.shardings.findIndex((s) => JSON.stringify(s) === specKey);
      if (sharding < 0) sharding = this.shardings.push(spec) - 1;
      i = this.leafKinds.push({ shape, dtype, sharding }) - 1;
      this.#index.set(key, i);
    }
    return { leaf: i };
  }

  blueprint(root: TreeShape): Blueprint {
    return { root, leafKinds: this.leafKinds, shardings: this.shardings };
  }
}

/** S5's transformer: 48 layers of width 4,096, grouped-query attention, a gated MLP. */
export const S5_LAYERS = 48;
const S5 = { vocab: 128_256, width: 4_096, kv: 1_024, mlp: 14_336 };

/**
 * S5: a transformer's parameters (bfloat16) and its Adam state ({"step", "mu", "nu"}, float32,
 * mu and nu mirroring the parameters): {"params": ..., "opt_state": ...}, 1,303 leaves.
 */
export function s5Blueprint(): Blueprint {
  const kinds = new Kinds();
  const params = (dtype: DTypeName): TreeShape => {
    const { vocab, width, kv, mlp } = S5;
    const w = (shape: number[], spec: SpecEntry[]) => kinds.leaf(shape, dtype, spec);
    const norm = (): TreeShape => ({ dict: { scale: w([width], REPLICATED) } });
    const layer = (): TreeShape => ({
      dict: {
        attention: {
          dict: {
            q_proj: w([width, width], IN),
            k_proj: w([width, kv], IN),
            v_proj: w([width, kv], IN),
            o_proj: w([width, width], OUT),
          },
        },
        mlp: {
          dict: {
            gate_proj: w([width, mlp], IN),
            up_proj: w([width, mlp], IN),
            down_proj: w([mlp, width], OUT),
          },
        },
        input_layernorm: norm(),
        post_attention_layernorm: norm(),
      },
    });
    return {
      dict: {
        embed_tokens: { dict: { embedding: w([vocab, width], EMBED) } },
        layers: { list: Array.from({ length: S5_LAYERS }, layer) },
        norm: norm(),
      },
    };
  };
  const root: TreeShape = {
    dict: {
      params: params("bfloat16"),
      opt_state: {
        dict: {
          step: kinds.leaf([], "int32", REPLICATED),
          mu: params("float32"),
          nu: params("float32"),
        },
      },
    },
  };
  return kinds.blueprint(root);
}

/** S6's model: 12 blocks of width 2,048, as an Equinox or Flax model and optax state hold it. */
export const S6_BLOCKS = 12;
const S6 = { vocab: 50_304, width: 2_048, mlp: 8_192, heads: 16 };

/**
 * S6: a model of registered dataclasses (Linear and Block; attention has no biases, so None
 * leaves) and namedtuples (LayerNorm), in tuples, with optax's state for it:
 * (ScaleByAdamState(count, mu, nu), EmptyState()), mu and nu mirroring the model.
 */
export function s6Blueprint(): Blueprint {
  const kinds = new Kinds();
  const node = (name: string) => `${NODES_MODULE}.${name}`;
  const model = (dtype: DTypeName): TreeShape => {
    const { vocab, width, mlp, heads } = S6;
    const w = (shape: number[], spec: SpecEntry[]) => kinds.leaf(shape, dtype, spec);
    const linear = (weight: TreeShape, bias: TreeShape, activation: string): TreeShape => ({
      custom: node("Linear"),
      data: { weight, bias },
      meta: { activation },
    });
    const layerNorm = (): TreeShape => ({
      namedtuple: node("LayerNorm"),
      fields: { scale: w([width], REPLICATED), bias: w([width], REPLICATED) },
    });
    const projection = (spec: SpecEntry[]) => linear(w([width, width], spec), null, "none");
    const block = (): TreeShape => ({
      custom: node("Block"),
      data: {
        attn: { tuple: [projection(IN), projection(IN), projection(IN), projection(OUT)] },
        mlp: {
          tuple: [
            linear(w([width, mlp], IN), w([mlp], TENSOR), "gelu"),
            linear(w([mlp, width], OUT), w([width], REPLICATED), "none"),
          ],
        },
        norm1: layerNorm(),
        norm2: layerNorm(),
      },
      meta: { num_heads: heads },
    });
    return {
      tuple: [
        w([vocab, width], EMBED),
        { list: Array.from({ length: S6_BLOCKS }, block) },
        layerNorm(),
      ],
    };
  };
  const root: TreeShape = {
    dict: {
      model: model("bfloat16"),
      opt_state: {
        tuple: [
          {
            namedtuple: node("ScaleByAdamState"),
            fields: {
              count: kinds.leaf([], "int32", REPLICATED),
              mu: model("float32"),
              nu: model("float32"),
            },
          },
          { namedtuple: node("EmptyState"), fields: {} },
        ],
      },
    },
  };
  return kinds.blueprint(root);
}

/** The 2-axis mesh of S7: 8 × 16 = 128 devices. */
export const FLAT_MESH = { meshShape: [8, 16], axisNames: ["fsdp", "tensor"] };

/** S7's model: Llama 2 7B, 32 layers of width 4,096, by its Hugging Face parameter names. */
export const S7_LAYERS = 32;
const S7 = { vocab: 32_000, width: 4_096, mlp: 11_008 };

/**
 * S7: Llama 2 7B's 291 parameters (bfloat16) by their Hugging Face names and their two Adam
 * moments (float32) in one flat dict keyed by dotted paths, as `flax.traverse_util.flatten_dict`
 * (sep=".") makes of {"params": ..., "opt_state": {"mu": ..., "nu": ...}}: 873 leaves,
 * "params.model.layers.12.mlp.up_proj.weight" and so on.
 */
export function s7Blueprint(): Blueprint {
  const kinds = new Kinds();
  const { vocab, width, mlp } = S7;
  const into: SpecEntry[] = ["tensor", "fsdp"]; // HF weights are [out, in]
  const outOf: SpecEntry[] = ["fsdp", "tensor"];
  const names: [string, number[], SpecEntry[]][] = [
    ["model.embed_tokens.weight", [vocab, width], into],
  ];
  for (let i = 0; i < S7_LAYERS; i++) {
    const layer = `model.layers.${i}`;
    for (const p of ["q_proj", "k_proj", "v_proj"])
      names.push([`${layer}.self_attn.${p}.weight`, [width, width], into]);
    names.push([`${layer}.self_attn.o_proj.weight`, [width, width], outOf]);
    for (const p of ["gate_proj", "up_proj"])
      names.push([`${layer}.mlp.${p}.weight`, [mlp, width], into]);
    names.push([`${layer}.mlp.down_proj.weight`, [width, mlp], outOf]);
    names.push([`${layer}.input_layernorm.weight`, [width], REPLICATED]);
    names.push([`${layer}.post_attention_layernorm.weight`, [width], REPLICATED]);
  }
  names.push(["model.norm.weight", [width], REPLICATED], ["lm_head.weight", [vocab, width], into]);
  const dict: Record<string, TreeShape> = {};
  for (const [prefix, dtype] of [
    ["params", "bfloat16"],
    ["opt_state.mu", "float32"],
    ["opt_state.nu", "float32"],
  ] as const) {
    for (const [name, shape, spec] of names)
      dict[`${prefix}.${name}`] = kinds.leaf(shape, dtype, spec);
  }
  return kinds.blueprint({ dict });
}

/** The number of leaves of a blueprint (None is not a leaf). */
export function countLeaves(node: TreeShape): number {
  if (node === null) return 0;
  if ("leaf" in node) return 1;
  const children =
    "list" in node
      ? node.list
      : "tuple" in node
        ? node.tuple
        : "dict" in node
          ? Object.values(node.dict)
          : "fields" in node
            ? Object.values(node.fields)
            : Object.values(node.data);
  return children.reduce((n, child) => n + countLeaves(child), 0);
}
