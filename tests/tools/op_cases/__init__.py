# Op conformance cases, one module per op family (see tests/tools/opcase.py); gen_op_cases.py imports them all.
