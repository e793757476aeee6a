/* diff: the `mcpwarden diff OLD NEW [--json]` command (issue 4, item 4):
 * the breaking changes between two saved tool listings (checks/drift.h),
 * no network, plus the schemas that broke: a schema-invalid,
 * schema-unsupported or output-required-unknown contract finding
 * (checks/contract.h) of NEW that OLD did not have is breaking too. docs/contract.md has the JSON shape and the exit codes:
 * 0 no breaking change, 1 breaking changes, 2 bad usage or a bad file.
 * --format FMT[=FILE] (repeatable) writes the CI formats of report.h.
 */
#ifndef MCPWARDEN_DIFF_H
#define MCPWARDEN_DIFF_H

/* argv[0] is "diff" (main passes argv + 1). Returns the exit code. */
int diff_main(int argc, char **argv);

#endif
