#!/bin/sh
set -e
vllm serve acme/Bench-7B --tensor-parallel-size 1
