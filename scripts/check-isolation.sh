#!/usr/bin/env bash
# Proves that `npm test` leaves the machine's own services alone (issue 61): while the suite runs
# (twice in a row, fault tests included), a witness holds a connection to the machine's Postgres
# and one to its Redis. Afterwards the held Postgres session must answer with the same backend pid,
# pg_postmaster_start_time() and Redis's run_id must be unchanged, and no ping may have failed.
# Exit status 0 when every run passed and the witness saw nothing; 1 otherwise.
#
#   bash scripts/check-isolation.sh            # two runs of `npm test`
#   CHECK_ISOLATION_RUNS=1 CHECK_ISOLATION_COMMAND='npx vitest run test/faults' bash scripts/check-isolation.sh
#
# Uses TASKQ_TEST_DSN and TASKQ_TEST_REDIS_URL like the tests (defaults: the local services).
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${CHECK_ISOLATION_RUNS:-2}
command=${CHECK_ISOLATION_COMMAND:-npm test}
logdir=$(mktemp -d "${TMPDIR:-/tmp}/taskq-check-isolation-XXXXXX")

coproc WITNESS { exec node --import tsx scripts/isolation-witness.ts; }
witness_pid=$WITNESS_PID
if ! read -r -t 60 ready <&"${WITNESS[0]}"; then
  echo "check-isolation: the witness did not start" >&2
  exit 1
fi
echo "check-isolation: witness ready: $ready"

status=0
results=()
for i in $(seq 1 "$runs"); do
  echo "check-isolation: $command, run $i of $runs (log: $logdir/run-$i.log)"
  start=$(date +%s)
  bash -c "$command" >"$logdir/run-$i.log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  # The vitest summaries (one for the suite, one for the fault tests), colour codes removed.
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$logdir/run-$i.log" | grep -E '^ *(Test Files|Tests) ' | tr -s ' ' | paste -sd ';' -)
  results+=("run $i: exit $rc in ${took}s; $summary")
  echo "check-isolation: ${results[-1]}"
  [ "$rc" -eq 0 ] || status=1
done

# Closing the witness's stdin asks for its verdict.
exec {WITNESS[1]}>&-
verdict=""
read -r -t 60 verdict <&"${WITNESS[0]}" || true
wait "$witness_pid"
witness_rc=$?
[ "$witness_rc" -eq 0 ] || status=1

echo
echo "== check-isolation =="
printf '%s\n' "${results[@]}"
echo "witness before: $ready"
echo "witness after:  ${verdict:-<no verdict>}"
if [ "$status" -eq 0 ]; then
  echo "OK: $runs run(s) of $command passed; the held Postgres connection and the services were left alone"
  rm -rf "$logdir"
else
  echo "FAILED: see above (logs in $logdir)"
fi
exit "$status"
