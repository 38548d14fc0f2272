"""Writes tests/conformance/vectors.json as plain lines that a C program reads with sscanf (keys in hex):

    base <base_us>
    case <index> <algorithm> <burst|-> <buckets|-> <policy...>
    hit|peek <t> <cost> <key_hex> <allowed> <limit> <remaining> <reset_after> <retry_after> <used> <policy_index>
    reset <t> <key_hex>
"""
import json
import sys

doc = json.load(open(sys.argv[1], encoding="utf-8"))
print("base", doc["base_us"])
for index, case in enumerate(doc["cases"]):
    opt = lambda v: "-" if v is None else str(v)  # noqa: E731
    print("case", index, case["algorithm"], opt(case["burst"]), opt(case["buckets"]), case["policy"])
    for step in case["steps"]:
        key = step["key"].encode().hex()
        if step["op"] == "reset":
            print("reset", step["t"], key)
            continue
        e = step["expect"]
        print(step["op"], step["t"], step["cost"], key, int(e["allowed"]), e["limit"], e["remaining"],
              e["reset_after"], e["retry_after"], e["used"], e.get("policy_index", 0))
