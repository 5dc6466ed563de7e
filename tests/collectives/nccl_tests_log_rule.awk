# The rule scripts that read nccl-tests logs apply (the layout of NVIDIA/nccl-tests
# src/util.cu): a data row is a line not starting with '#' of 13 whitespace-separated
# fields, size count type redop root, then time algbw busbw #wrong for out-of-place and
# again for in-place; each test ends with "# Out of bounds values : N OK|FAILED" and
# "# Avg bus bandwidth    : X", the mean busbw over the test's rows and placements.
# nccl-tests >= 2.13 opens each test with "# nccl-tests version ..." and lists its ranks
# under "# Using devices" as "#  Rank  N Group  G Pid  P on  HOST device  D [BUS] NAME"; a
# "# Avg bus bandwidth" line ends in OK or FAILED when NCCL_TESTS_MIN_BW is set.
# Prints one line per test: "TEST rows=R avg=X computed=Y wrong=W ranks=N version=V
# min_bw=OK|FAILED|-", "BAD <line>" for any
# line that breaks the rule, and the column names and units it read the rows by:
# "FIELDS size count type redop root time algbw busbw #wrong ..." and "UNITS (B) ...".
function num(s) { return s ~ /^-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$/ }
/^# nccl-tests version / { version = $4; next }
/^# Collective test starting:/ { test = $5; rows = 0; sum = 0; n = 0; ranks = 0; next }
/^# Using devices$/ { next }
/^#  Rank / {
  if ($3 ~ /^[0-9]+$/ && $4 == "Group" && $6 == "Pid" && $7 ~ /^[0-9]+$/ && $8 == "on" && $10 == "device" &&
      $11 ~ /^[0-9]+$/ && $12 ~ /^\[.*\]$/ && NF >= 13) ranks++
  else print "BAD " $0
  next
}
/^# Out of bounds values/ { wrong = $7; next }
/^# Avg bus bandwidth/ {
  printf "%s rows=%d avg=%s computed=%.6g wrong=%s ranks=%d version=%s min_bw=%s\n", test, rows, $6, (n ? sum / n : 0),
    wrong, ranks, (version == "" ? "-" : version), (NF >= 7 ? $7 : "-")
  version = ""
  next
}
/^#[ \t]+size[ \t]+count[ \t]/ { $1 = ""; print "FIELDS" $0; next }
/^#[ \t]+\(B\)[ \t]/ { $1 = ""; print "UNITS" $0; next }
/^#/ { next }
/^[ \t]*$/ { next }
{
  if (NF == 13 && num($1) && num($2) && num($5) && num($6) && num($7) && num($8) && ($9 == "N/A" || num($9)) &&
      num($10) && num($11) && num($12) && ($13 == "N/A" || num($13))) {
    rows++; sum += $8 + $12; n += 2
  } else if (NF == 9 && num($1) && num($6) && num($8)) {  # one placement only
    rows++; sum += $8; n += 1
  } else {
    print "BAD " $0
  }
}
