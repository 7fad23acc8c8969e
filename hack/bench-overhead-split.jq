# For hack/bench-overhead.sh: at concurrency $k of a `podstep bench -o json`, per pod, the own time
# of the steps that touch the pod's files (dirs, run-sandbox, create, remove-dirs), added, and the
# rest of the own time; prints the median over the pods of each, or "n/a n/a" when the result has
# no own_steps (an older podstep) or a pod missed one of the steps.
def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r3: . * 1000 | round / 1000;
[.levels[] | select(.concurrency == $k)][0] as $l
| ($l.own.samples_ms // []) as $own | ($own | length) as $n
| [($l.own_steps // [])[] | select(.name == "dirs" or .name == "run-sandbox" or .name == "create" or .name == "remove-dirs") | .samples_ms] as $f
| if $n > 0 and ($f | length) == 4 and all($f[]; length == $n) then
    [range(0; $n) as $i | [$f[][$i]] | add] as $files
  | "\($files | med | r3) \([range(0; $n) as $i | $own[$i] - $files[$i]] | med | r3)"
  else "n/a n/a" end
