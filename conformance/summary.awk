# Summarizes the -v output of TestRetryConformance: pass, fail and skip per
# transport, then per method, with the reason of the skips and the log of
# the failures.
#
# "=== RUN   TestRetryConformance/grpc-7-[...]-storage.resumable.upload-0"
# starts a subtest, whose log lines follow (a skip's reason is its last);
# "    --- PASS: TestRetryConformance/NAME (1.2s)" reports its result.

/^=== (RUN|CONT|NAME) / { cur = $3; sub("^TestRetryConformance/", "", cur); next }

/^[[:space:]]+[a-z_]+\.go:[0-9]+: / {
  line = $0; sub("^[[:space:]]*[a-z_]+\\.go:[0-9]+: ", "", line)
  last[cur] = line; logs[cur] = logs[cur] "\n      " line
  next
}

/^    --- (PASS|FAIL|SKIP): TestRetryConformance\// {
  res = $2; sub(":", "", res)
  name = $3; sub("^TestRetryConformance/", "", name)
  tr = name; sub("-.*", "", tr)
  m = name; sub(".*\\]-", "", m); sub("-[0-9]+$", "", m)
  n[tr, res]++; seen[tr] = 1; byMethod[tr, m, res]++; methods[m] = 1
  if (res == "FAIL") fails[tr] = fails[tr] "\n    " name logs[name]
  if (res == "SKIP") {
    why = last[name]
    if (why ~ /not yet supported in the testbench/) why = "the fake answers 501"
    else why = "skipped by the suite: " why
    skip[tr, m] = why
  }
}

END {
  split("http grpc", trs, " ")
  for (i = 1; i <= 2; i++) {
    tr = trs[i]
    if (!(tr in seen)) continue
    printf "%s: %d pass, %d fail, %d skip\n", toupper(tr), n[tr, "PASS"], n[tr, "FAIL"], n[tr, "SKIP"]
    for (m in methods) {
      p = byMethod[tr, m, "PASS"] + 0; f = byMethod[tr, m, "FAIL"] + 0; k = byMethod[tr, m, "SKIP"] + 0
      if (p + f + k == 0) continue
      line = sprintf("  %-36s %3d pass %3d fail %3d skip", m, p, f, k)
      if ((tr, m) in skip) line = line "  (" skip[tr, m] ")"
      print line | "sort"
    }
    close("sort")
    if (fails[tr] != "") printf "  failed:%s\n", fails[tr]
  }
}
