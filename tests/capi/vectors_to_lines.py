"""Writes tests/conformance/vectors.json as plain lines that a C program reads with sscanf (keys in hex):

    base <base_us>
    case <index> <algorithm> <burst|-> <buckets|-> <policy...>
    hit|peek|refund <t> <cost> <key_hex> <allowed> <limit> <remaining> <reset_after> <retry_after> <used> <policy_index>
    reset <t> <key_hex>
    reserve <step> <t> <cost> <key_hex> <max_wait> <allowed> <limit> <remaining> <reset_after> <retry_after> <used>
        <policy_index> <wait>                        (one line; <step>: the step's index in its case)
    cancel <t> <cost> <key_hex> <reservation step> <given>
    refused <t> <cost> <key_hex> <max_wait>          (a reserve the limiter refuses: invalid argument)
"""
import json
import sys

doc = json.load(open(sys.argv[1], encoding="utf-8"))
print("base", doc["base_us"])
for index, case in enumerate(doc["cases"]):
    opt = lambda v: "-" if v is None else str(v)  # noqa: E731
    print("case", index, case["algorithm"], opt(case["burst"]), opt(case["buckets"]), case["policy"])
    for index_in_case, step in enumerate(case["steps"]):
        key = step["key"].encode().hex()
        if step["op"] == "reset":
            print("reset", step["t"], key)
            continue
        e = step["expect"]
        if step["op"] == "cancel":
            print("cancel", step["t"], step["cost"], key, step["reservation"], int(e["given"]))
            continue
        if "error" in e:
            print("refused", step["t"], step["cost"], key, step["max_wait"])
            continue
        if step["op"] == "reserve":
            print("reserve", index_in_case, step["t"], step["cost"], key, step["max_wait"], int(e["allowed"]), e["limit"],
                  e["remaining"], e["reset_after"], e["retry_after"], e["used"], e.get("policy_index", 0), e["wait"])
            continue
        print(step["op"], step["t"], step["cost"], key, int(e["allowed"]), e["limit"], e["remaining"],
              e["reset_after"], e["retry_after"], e["used"], e.get("policy_index", 0))
