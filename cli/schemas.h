/* cli/schemas.h: the versions of the JSON the commands print, each described by a JSON Schema in
 * docs/schemas/ (tests/e2e/test_schemas.py validates real outputs against them). Within a
 * version fields may be added, and readers ignore the ones they do not know; a field removed,
 * renamed, or changed in meaning or type takes the next version (docs/OUTPUTS.md). summary.json's
 * version is output/summary_json.h SUMMARY_VERSION. */
#ifndef SYNCSPY_CLI_SCHEMAS_H
#define SYNCSPY_CLI_SCHEMAS_H

#define CHECK_JSON_VERSION 1 /* check --json: docs/schemas/check.schema.json */
#define DIFF_JSON_VERSION 1  /* diff --json: docs/schemas/diff.schema.json */
#define HTML_DATA_VERSION 1  /* html's embedded data: docs/schemas/html-data.schema.json */

#endif
