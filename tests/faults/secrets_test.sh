#!/usr/bin/env bash
# No secret reaches a results file: variables outside the allowed prefixes are never
# stored, and secret-looking names under them (TOKEN, SECRET, PASSWORD, a KEY word) are
# stored with their value redacted; readers (show, export, h5dump) never see the value.
source "$(dirname "$0")/lib.sh"
cd "$dir" || exit 1
SLURM_JOB_TOKEN=hunter2-token UCX_IB_PASSWORD=hunter2-pw NCCL_API_KEY=hunter2-key AWS_SECRET_ACCESS_KEY=hunter2-aws \
  NCCL_IB_PKEY=3 "$ibt" collectives --op all_reduce -b 8 -e 64 -n 2 -w 1 --out e.h5 >/dev/null 2>&1 || fail "no run made"
for reader in "h5dump e.h5" "$ibt export e.h5 --json" "$ibt show e.h5 --run 1"; do
  $reader 2>&1 | grep -q hunter2 && fail "$reader shows a secret value"
done
json=$("$ibt" export e.h5 --json)
for var in SLURM_JOB_TOKEN UCX_IB_PASSWORD NCCL_API_KEY; do
  grep -q "\"$var\": \"<redacted>\"" <<<"$json" || fail "$var is not recorded as redacted"
done
grep -q '"AWS_SECRET_ACCESS_KEY"' <<<"$json" && fail "a variable outside the allowed prefixes was stored"
grep -q '"NCCL_IB_PKEY": "3"' <<<"$json" || fail "NCCL_IB_PKEY (a partition number) was not kept"
ok "secret-looking variables redacted, others outside the allow list absent, NCCL_IB_PKEY kept"
