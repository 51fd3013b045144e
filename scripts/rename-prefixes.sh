#!/bin/sh
# One-off (issue 37): function prefixes renamed to the file that owns them. Kept for branches
# made before the rename: run it in such a branch, then merge.
set -eu
files=$(git ls-files 'agent/*' 'entry/*' 'collectors/*' 'output/*' 'cli/*' 'common/*' 'tests/*' 'bench/*' 'docs/*' '*.md' | grep -E '\.(c|h|cpp|py|md)$')
sed -i -E \
    -e 's/\bpynames_([a-z_]+)/python_names_\1/g' \
    -e 's/\btallies_([a-z_]+)/budget_counts_\1/g' \
    -e 's/\bframes_keys\b/stack_names_keys/g' \
    -e 's/\bframes_name_key\b/stack_names_resolve/g' \
    -e 's/\bframes_of_stack\b/stack_names_frames/g' \
    -e 's/\bexit_model_([a-z_]+)/report_model_\1/g' \
    $files
