/**
 * The import rules of the layering drawn in docs/architecture.md, checked by `npm run lint`
 * (`depcruise`). Type-only imports count: a layer that may not import a folder may not import its
 * types either.
 *
 *   bench/, cli/, test/                       may import anything
 *   pipeline/*.ts (the assembly: chain-context.ts, runtime.ts, wiring.ts)
 *                                             any stage, lib/, topics/, es/ (never api/, cli/, bench/,
 *                                             test/); chain-context.ts < runtime.ts < wiring.ts
 *   api/                                      everything but pipeline/ (and cli/, bench/, test/)
 *   pipeline/<stage>/                         lib/, topics/, es/, pipeline/kafka/ and its own folder
 *   topics/, es/                              lib/ and their own folder
 *   lib/                                      lib/ only (never api/, pipeline/, cli/, bench/, test/, topics/, es/)
 *   console/src/                              console/src/ only (browser code: no Node module of ours), and
 *                                             the delivery log's types (import type from lib/alerting/deliveries.ts, destinations.ts)
 *
 * npm packages and node: built-ins are allowed everywhere. No runtime import cycle anywhere
 * (`no-circular`; a cycle through a type-only import is allowed).
 * @type {import('dependency-cruiser').IConfiguration}
 */
const external = ["core", "npm", "npm-dev", "npm-optional", "npm-peer", "npm-bundled", "npm-no-pkg", "npm-unknown"];

module.exports = {
  forbidden: [
    {
      name: "api-not-pipeline",
      severity: "error",
      comment: "The API reads the contracts (lib/, topics/, es/), never a stage or the pipeline runtime.",
      from: { path: "^api/" },
      to: { path: "^(pipeline|cli|bench|test)/" },
    },
    {
      name: "stage-only-contracts",
      severity: "error",
      comment:
        "A stage (pipeline/<stage>/, also pipeline/kafka/) imports lib/, topics/, es/, pipeline/kafka/ and its own folder: no stage imports another stage.",
      from: { path: "^pipeline/([^/]+)/" },
      to: { pathNot: "^(lib|topics|es)/|^pipeline/(kafka|$1)/", dependencyTypesNot: external },
    },
    {
      name: "assembly-not-entry-points",
      severity: "error",
      comment:
        "The files at the root of pipeline/ (chain-context.ts, runtime.ts, wiring.ts) assemble the stages: they import the stages, lib/, topics/ and es/, never an entry point (cli/, bench/, test/) or the API.",
      from: { path: "^pipeline/[^/]+\\.ts$" },
      to: { path: "^(api|cli|bench|test|console)/" },
    },
    {
      name: "assembly-order",
      severity: "error",
      comment:
        "Inside the assembly, chain-context.ts (builds each chain's context) is below runtime.ts (one chain's stages), which is below wiring.ts (every stage of every chain): no file imports one above it.",
      from: { path: "^pipeline/(chain-context|runtime)\\.ts$" },
      to: { path: "^pipeline/(runtime|wiring)\\.ts$", pathNot: "^pipeline/$1\\.ts$" },
    },
    {
      name: "contracts-only-lib",
      severity: "error",
      comment: "topics/ (Kafka contract) and es/ (Elasticsearch contract) import only lib/ and their own folder.",
      from: { path: "^(topics|es)/" },
      to: { pathNot: "^lib/|^$1/", dependencyTypesNot: external },
    },
    {
      name: "lib-self-contained",
      severity: "error",
      comment: "lib/ is the bottom layer: it imports only lib/ (and packages).",
      from: { path: "^lib/" },
      to: { pathNot: "^lib/", dependencyTypesNot: external },
    },
    {
      name: "console-browser-only",
      severity: "error",
      comment:
        "The web console's browser code (console/src/) imports only console/src/ and npm packages, the types of the delivery log (lib/alerting/deliveries.ts, destinations.ts) and the rule model's unions (lib/rules/model.ts) — types only, rule console-lib-types-only; console/build.ts (Node) may read es/ and lib/.",
      from: { path: "^console/src/" },
      to: { pathNot: "^console/src/|^lib/alerting/(deliveries|destinations)\\.ts$|^lib/rules/model\\.ts$", dependencyTypesNot: external },
    },
    {
      name: "console-lib-types-only",
      severity: "error",
      comment:
        "What console/src/ takes from lib/ are types only (import type: erased by esbuild), so no server code reaches the bundle; the modules it names import no Node module (the console's tsconfig has no Node types).",
      from: { path: "^console/src/" },
      to: { path: "^lib/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "no-circular",
      severity: "error",
      comment:
        "No runtime import cycle: when two modules need each other, the shared piece moves to a third both import. A cycle with a type-only import in it is erased at compile time and allowed.",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } },
    },
    {
      name: "no-unresolvable",
      severity: "error",
      comment: "An import that does not resolve (a moved file) would hide a broken rule.",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|\\.stack)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".js", ".mjs", ".cjs", ".json", ".d.ts"],
      mainFields: ["module", "main", "types", "typings"],
    },
  },
};
