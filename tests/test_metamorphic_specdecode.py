"""Metamorphic tests of the speculative-decoding reading (issue 25): generality tested, not hoped for.

Every speculative-decoding config the shared InferenceX history's window changes (scripts and srt-slurm
recipes of vLLM, SGLang, TRT-LLM and ATOM, as `checks.specdecode.inventory` finds them on the snapshot
`signoff-bot backtest` builds; one per PR and engine) is rewritten (`tests/metamorphic/rewrites.py`), each
kind both ways:

- preserve: what bash and the engine run is unchanged, so no row may change: the statuses of checks 9,
  10, 11 and recipe lint stay, and so do their reasons, except for line numbers (`path:N`, `line N`), which
  move when a rewrite adds lines (a preserving draft-length change also changes the numbers a row names;
  the lint row of a rewrite that adds a file, an eval twin or a library, keeps its status only: the new
  file is linted like any, and a twin repeats the findings of the recipe it copies);
- violate: the row the violation breaks (11; 10 for a patch site) FAILs, naming a file the rewrite wrote
  with a line (`path:N`), for the violation: a FAIL for what the bot could not read ("cannot read",
  "<not fixed>") is not one, and where the violation wrote a target (0.05 off, an eval arm's, the
  golden AL as TRT-LLM's count) the FAIL names it. Only configs whose base row does not FAIL already are
  rewritten that way.

Every rewritten script must pass `bash -n`. The rows are judged by the engine directly (`checks.engine`,
only the rules of those rows) on the PR's snapshot with the rewritten files, evidence it lacks read from
the cloned bundle as backtest reads it. Four synthetic configs written here (one per engine) are rewritten
the same way, so the suite means something without ../shared, and carry the kinds no config of the
history lends itself to (`HISTORY_GAPS`).

What today's code gets wrong is listed in `XFAIL`, with the row it gives (strict: when a fix lands the
entry turns into an unexpected pass and must go). The history part runs whenever ../shared exists (always
in CI: without it, it fails there).
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import SHARED_HISTORY
from tests.metamorphic.history import Config, History, clone, rows_of
from tests.metamorphic.rewrites import KINDS, ONE_WAY, RATE_KNOB, Skip, Target, Variant, written

BUNDLE = SHARED_HISTORY / "inferencex.bundle"
pytestmark = pytest.mark.slow  # about a minute on the shared history (still run in CI)
PER_PR = 1  # configs per PR and engine (by path): near-identical recipes of one PR add variants, not coverage
MIN_VARIANTS, MIN_CONFIGS = 300, 25
ENGINES = ("vllm", "sglang", "trtllm", "atom")
WAYS = ("preserve", "violate")
# What no config of the shared history lends itself to (the synthetic configs below cover them):
HISTORY_GAPS = {
    ("spelling", "preserve"): "no config of the window pins TRT-LLM's forced accepted-token count, and no base "
                              "branch's golden_al_distribution/README.md documents a rate spelling",
    ("spelling", "violate"): "the same",
    ("reflow", "violate"): "every acceptance target of the window is set in an assignment, never on a one-line "
                           "command or array",
}
COMPUTED = ("awk", "printf", "arith")  # one of them per config, in turn: the same reading, a third of the time

# (config, kind, way) -> the wrong row today's code gives. Strict xfails: each is the reading issue 25 fixes.
XFAIL: dict[tuple[str, str, str], str] = {
    ('#1800:ctx1dep4_gen1dep16_batch32_eplb0_mtp3.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 24 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the c...',
    ('#2120:minimaxm3_fp4_b200_mtp.sh', 'patch-site', 'preserve'):
        "10 PASS->FAIL: benchmarks/single_node/fixed_seq_len/minimaxm3_fp4_b200_mtp.sh:3 rewrites files of the installed engine (`sed -i 's/^A = 1$/A = 2/' /usr/local/lib/python3.12/dist-packages/vllm/envs.py`); pre-existing p...",
    ('#2121:agg-gb300-tp4-c1-mtp-hicache-jid2191933.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5/gb300-fp4/agentic/agg-gb300-tp4-c1-mtp-hicache-jid2191933-eval.yaml:40 SGLANG_SIMULATE_ACC_LEN=4.39: no committed golden curve for an unknown model...',
    ('#2123:glm5-mtp.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 2 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2157:agg-gb300-tp4-mtp-kvoffload.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/agg-gb300-tp4-mtp-kvoffload-eval.yaml:70 SGLANG_SIMULATE_ACC_LEN=3.49: no committed golden curve for an unknown model mtp in golden_al_...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_m...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method"...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:71 kimik2.5_fp4_b300_mtp.sh: synthetic_acceptance_length=4.24 pins AL 4.24, but the golden AL is 3.24 (kimik2.5_eagle3.yaml thinking_on/4); set sy...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_m...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method"...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:64 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_m...',
    ('#2158:kimik2.5_fp4_b300_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik2.5_fp4_b300_mtp.sh:64 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method"...',
    ('#2182:1p1d-dep2-tp4-eagle3-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 7 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2201:qwen3.5_fp4_mi355x_mtp.sh', 'patch-site', 'preserve'):
        "10 PASS->FAIL: benchmarks/single_node/fixed_seq_len/qwen3.5_fp4_mi355x_mtp.sh:3 rewrites files of the installed engine (`sed -i 's/^A = 1$/A = 2/' /sgl-workspace/sglang/python/sglang/srt/server_args.py`); pre-existing...",
    ('#2218:ctx1dep2_gen1tep16_mtp3_c48.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 10 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 FAIL->FAIL: benchmarks/multi_node/srt-slurm-recipes/trt...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:307 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:307 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:311 dsv4_fp4_b300_vllm_mtp.sh: synthetic_acceptance_length=3.49 pins AL 3.49, but the golden AL is 2.49 (dsv4_mtp.yaml thinking_on/3); set synthe...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:307 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:307 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:308 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('#2258:dsv4_fp4_b300_vllm_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_b300_vllm_mtp.sh:308 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('#2259:dsv4_fp4_b200_vllm_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:277 dsv4_fp4_b200_vllm_mtp.sh: synthetic_acceptance_length=3.49 pins AL 3.49, but the golden AL is 2.49 (dsv4_mtp.yaml thinking_on/3); set synthe...',
    ('#2259:dsv4_fp4_b200_vllm_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:273 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('#2259:dsv4_fp4_b200_vllm_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:273 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('#2259:dsv4_fp4_b200_vllm_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:274 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('#2259:dsv4_fp4_b200_vllm_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_b200_vllm_mtp.sh:274 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('#2314:1p2d-dep2-tp4-eagle3-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 7 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2316:8k1k_mtp_lowlat_0.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 8 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2319:disagg-gb300-12p4d-dep8-dep16-c1536-mtp-kvoffload.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-gb300-12p4d-dep8-dep16-c1536-mtp-kvoffload-eval.yaml:97 SGLANG_SIMULATE_ACC_LEN=3.49: no committed golden curve for an unknown m...',
    ('#2324:8k1k_mtp_lowlat_0.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 8 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:106 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:106 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_metho...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:110 minimaxm3_fp4_b300_mtp.sh: synthetic_acceptance_length=3.78 pins AL 3.78, but the golden AL is 2.78 (minimaxm3_eagle3_gqa.yaml thinking_on/3)...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:106 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:106 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_metho...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:107 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample...',
    ('#2328:minimaxm3_fp4_b300_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b300_mtp.sh:107 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_metho...',
    ('#2337:minimaxm3_fp8_b200_mtp.sh', 'patch-site', 'preserve'):
        "10 PASS->FAIL: benchmarks/single_node/fixed_seq_len/minimaxm3_fp8_b200_mtp.sh:3 rewrites files of the installed engine (`sed -i 's/^A = 1$/A = 2/' /usr/local/lib/python3.12/dist-packages/vllm/envs.py`); pre-existing p...",
    ('#2341:agg-gb300-tp4-mtp-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/agentic/agg-gb300-tp4-mtp-agentic-eval.yaml:122 synthetic_acceptance_length=3.49: no committed golden curve for an unknown model mtp in golden_al...',
    ('#2345:dsv4_fp4_mi355x_atom_mtp.sh', 'patch-site', 'preserve'):
        "10 PASS->FAIL: benchmarks/single_node/fixed_seq_len/dsv4_fp4_mi355x_atom_mtp.sh:3 rewrites files of the installed engine (`sed -i 's/^A = 1$/A = 2/' /usr/local/lib/python3.12/dist-packages/atom/config.py`); pre-existi...",
    ('#2353:agg-h200-tp16dp2ep32-latency-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/agg-h200-tp16dp2ep32-latency-agentic-eval.yaml:68 synthetic_acceptance_length=3.51: no committed golden curve for an unknown model dspark in ...',
    ('#2363:disagg-b300-1p1d-dep4-dep8-mtp.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 9 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:246 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_samp...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:246 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_met...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:250 kimik3_fp4_b300_vllm_mtp.sh: synthetic_acceptance_length=3.51 pins AL 3.51, but the golden AL is 2.51 (kimik3_dspark_probabilistic_sample_m...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:246 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_samp...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:246 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_met...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:247 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_samp...',
    ('#2380:kimik3_fp4_b300_vllm_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/kimik3_fp4_b300_vllm_mtp.sh:247 agentic dspark config (2 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_met...',
    ('#2390:disagg-b200-1p1d-dep8-dep8-mtp.yaml', 'eval-twin', 'preserve'):
        '9 PASS->PASS: spec-decode recipes benchmark through the chat template: disagg-b200-1p1d-dep8-dep8-mtp-eval.yaml (use_chat_template: true); disagg-b200-1p1d-dep8-dep8-mtp.yaml (use_chat_template: true); disagg-b200-1p1...',
    ('#2395:agg-gb300-tp8-mtp-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/agentic/agg-gb300-tp8-mtp-agentic-eval.yaml:123 synthetic_acceptance_length=3.49: no committed golden curve for an unknown model mtp in golden_al...',
    ('#2395:disagg-gb300-12p4d-dep8-dep16-c1024-mtp-kvoffload.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-gb300-12p4d-dep8-dep16-c1024-mtp-kvoffload-eval.yaml:95 SGLANG_SIMULATE_ACC_LEN=3.49: no committed golden curve for an unknown m...',
    ('#2398:disagg-gb300-1p1d-dep4-dep8-c128-mtp-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/agentic/disagg-gb300-1p1d-dep4-dep8-c128-mtp-agentic-eval.yaml:124 synthetic_acceptance_length=3.49: no committed golden curve for an unknown mod...',
    ('#2398:disagg-gb300-2p1d-dep8-tp4-c8-mtp-kvoffload.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-gb300-2p1d-dep8-tp4-c8-mtp-kvoffload-eval.yaml:95 SGLANG_SIMULATE_ACC_LEN=3.49: no committed golden curve for an unknown model m...',
    ('#2404:agg-gb200-dep16-throughput-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/kimi-k3/agentic/agg-gb200-dep16-throughput-agentic-eval.yaml:111 synthetic_acceptance_length=3.51: no committed golden curve for an unknown model dspark in g...',
    ('#2415:disagg-gb300-1p1d-dep8-dep8-c384-mtp-agentic.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/vllm/deepseek-v4/agentic/disagg-gb300-1p1d-dep8-dep8-c384-mtp-agentic-eval.yaml:124 synthetic_acceptance_length=3.49: no committed golden curve for an unknown mod...',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:116 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:116 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:112 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:112 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2420:qwen3.5_fp4_b200_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:117 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:117 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:114 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2421:qwen3.5_fp4_b300_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp4_b300_sglang_mtp.sh:114 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:123 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:123 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:127 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:127 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:123 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:123 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:124 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2427:qwen3.5_fp8_h100_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h100_mtp.sh:124 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:125 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:125 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:129 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:129 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:125 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:125 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:126 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2428:qwen3.5_fp8_h200_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_h200_mtp.sh:126 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:205 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:205 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:209 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:209 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:205 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:205 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:206 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2447:glm5.2_fp4_b300_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b300_sglang_mtp.sh:206 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:275 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:275 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:271 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:271 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:272 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2448:glm5.2_fp4_b200_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:272 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2462:1p1d-tp4-dep4-eagle3-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 7 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2471:1p4d-dep2-tp4-eagle3-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 6 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2477:agg-gb300-tp2-c1-mtp-hicache-jid2530006.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/qwen3.5/gb300-fp4/agentic/agg-gb300-tp2-c1-mtp-hicache-jid2530006-eval.yaml:26 SGLANG_SIMULATE_ACC_LEN=4.39: no committed golden curve for an unknown model...',
    ('#2483:2p1d-dep2-dep4-eagle3-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 2 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the ch...',
    ('#2486:1p1d-dep2-dep8-eagle3-c64-8k1k.yaml', 'eval-twin', 'preserve'):
        '11 N/A->N/A: the PR adds or changes no agentic speculative-decoding config; its 12 non-agentic spec-decode config(s) add no synthetic acceptance (measured AL); 9 PASS->PASS: spec-decode recipes benchmark through the c...',
    ('#2493:kimik2.5_fp4_b300_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/deprecated/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejecti...',
    ('#2493:kimik2.5_fp4_b300_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/deprecated/kimik2.5_fp4_b300_mtp.sh:63 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sam...',
    ('#2493:kimik2.5_fp4_b300_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/deprecated/kimik2.5_fp4_b300_mtp.sh:71 kimik2.5_fp4_b300_mtp.sh: synthetic_acceptance_length=4.24 pins AL 4.24, but the golden AL is 3.24 (kimik2.5_eagle3.yaml thinking_on...',
    ('#2493:kimik2.5_fp4_b300_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/deprecated/kimik2.5_fp4_b300_mtp.sh:64 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejecti...',
    ('#2493:kimik2.5_fp4_b300_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/deprecated/kimik2.5_fp4_b300_mtp.sh:64 agentic eagle3 config (4 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sam...',
    ('#2511:minimaxm3_fp4_b200_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh:202 minimaxm3_fp4_b200_mtp.sh: synthetic_acceptance_length=3.78 pins AL 3.78, but the golden AL is 2.78 (minimaxm3_eagle3_gqa.yaml thinking_on/3)...',
    ('#2511:minimaxm3_fp4_b200_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh:198 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample...',
    ('#2511:minimaxm3_fp4_b200_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh:198 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_metho...',
    ('#2511:minimaxm3_fp4_b200_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh:199 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample...',
    ('#2511:minimaxm3_fp4_b200_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/minimaxm3_fp4_b200_mtp.sh:199 agentic eagle3 config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_metho...',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:111 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:111 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:107 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:107 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:108 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2514:qwen3.5_fp8_b200_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b200_sglang_mtp.sh:108 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:116 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:116 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:112 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:112 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2515:qwen3.5_fp8_b300_sglang_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/qwen3.5_fp8_b300_sglang_mtp.sh:113 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2520:disagg-gb300-2p4d-dep8-dep16-c256-mtp-kvoffload.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/deepseek-v4/agentic/disagg-gb300-2p4d-dep8-dep16-c256-mtp-kvoffload-eval.yaml:95 SGLANG_SIMULATE_ACC_LEN=3.49: no committed golden curve for an unknown mod...',
    ('#2522:dsv4_fp4_mi355x_vllm_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh:416 dsv4_fp4_mi355x_vllm_mtp.sh: synthetic_acceptance_length=3.49 pins AL 3.49, but the golden AL is 2.49 (dsv4_mtp.yaml thinking_on/3); set sy...',
    ('#2522:dsv4_fp4_mi355x_vllm_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh:412 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_...',
    ('#2522:dsv4_fp4_mi355x_vllm_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh:412 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method...',
    ('#2522:dsv4_fp4_mi355x_vllm_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh:413 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_...',
    ('#2522:dsv4_fp4_mi355x_vllm_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/dsv4_fp4_mi355x_vllm_mtp.sh:413 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method...',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:69 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:69 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:73 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:73 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'master-env', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:69 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'master-env', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:69 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:70 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2528:glm5.2_fp8_mi325x_mtp.sh', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp8_mi325x_mtp.sh:70 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('#2529:disagg-h200-2p2d-pcp8-tp8-dp8-mtp.yaml', 'eval-twin', 'preserve'):
        '11 PASS->FAIL: benchmarks/multi_node/srt-slurm-recipes/sglang/glm5.2/agentic/disagg-h200-2p2d-pcp8-tp8-dp8-mtp-eval.yaml:68 SGLANG_SIMULATE_ACC_LEN=3.99: no committed golden curve for an unknown model mtp in golden_al...',
    ('synthetic:atom', 'arith', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$((299: cannot read the pinned acceptance length',
    ('synthetic:atom', 'arith', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$((304: cannot read the pinned acceptance length',
    ('synthetic:atom', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$(awk: cannot read the pinned acceptance length',
    ('synthetic:atom', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$(awk: cannot read the pinned acceptance length',
    ('synthetic:atom', 'printf', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$(printf: cannot read the pinned acceptance length',
    ('synthetic:atom', 'printf', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:5 spec-decode-acceptance-length=$(printf: cannot read the pinned acceptance length',
    ('synthetic:atom', 'reflow', 'preserve'):
        "11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:9 spec-decode-acceptance-length=2.99: no committed golden curve for glm5.2 unknown draft method in golden_al_distribution/, and the sign-off'...",
    ('synthetic:atom', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:6 spec-decode-acceptance-length=${MM_AL_0}: cannot read the pinned acceptance length',
    ('synthetic:atom', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh:6 spec-decode-acceptance-length=${MM_AL_0}: cannot read the pinned acceptance length',
    ('synthetic:sglang', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:12 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('synthetic:sglang', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:12 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('synthetic:sglang', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:16 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+1 more)',
    ('synthetic:sglang', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:16 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length (+2 more)',
    ('synthetic:sglang', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:13 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('synthetic:sglang', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh:13 SGLANG_SIMULATE_ACC_LEN=<not fixed>: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'arith', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$((199: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'arith', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$((204: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(awk: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(awk: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'case', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:10 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=${MM_AL_0: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'case', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:10 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=${MM_AL_0: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'printf', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(printf: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'printf', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(printf: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:7 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=${MM_AL_0: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:7 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=${MM_AL_0: cannot read the pinned acceptance length',
    ('synthetic:trtllm', 'spelling', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh:6 TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=$(awk: cannot read the pinned acceptance length',
    ('synthetic:vllm', 'awk', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh:6 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('synthetic:vllm', 'awk', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh:6 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
    ('synthetic:vllm', 'sourced', 'preserve'):
        '11 PASS->FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh:7 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_me...',
    ('synthetic:vllm', 'sourced', 'violate'):
        '11 FAIL: benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh:7 agentic mtp config (3 draft tokens) sets "rejection_sample_method": "synthetic" without synthetic_acceptance_length; add "rejection_sample_method":...',
}


@dataclass(frozen=True)
class Planned:
    config: Config
    kind: str
    way: str
    variant: Variant | None
    skipped: str = ""  # why the rewrite does not apply to the config
    written: tuple[str, ...] = ()  # a violation: the values it wrote, one of which its FAIL must name

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.config.name, self.kind, self.way)


@lru_cache(maxsize=1)
def history() -> History | None:
    """The window's configs, read once per session (the bundle is cloned to a temporary directory)."""
    if not BUNDLE.exists():
        return None
    tmp = tempfile.mkdtemp(prefix="metamorphic-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    h = History(clone(BUNDLE, Path(tmp) / "inferencex"))
    atexit.register(h.close)
    return h


@lru_cache(maxsize=1)
def configs() -> tuple[Config, ...]:
    h = history()
    if h is None:
        return ()
    return tuple(h.configs(PER_PR))


def target(c: Config) -> Target:
    return Target(c.snapshot, c.path, c.engine or _engine_of(c.path), c.agentic, dict(c.env), c.refs)


def _engine_of(path: str) -> str:
    for engine in ENGINES:
        if engine in path:
            return engine
    return ""


@lru_cache(maxsize=1)
def plan() -> tuple[Planned, ...]:
    out = []
    for n, c in enumerate(configs()):
        t = target(c)
        base = {row: status for row, status, _ in c.rows}
        for kind, rewrite in KINDS.items():
            for way in WAYS:
                if kind in COMPUTED and COMPUTED[n % len(COMPUTED)] != kind:
                    out.append(Planned(c, kind, way, None, "computed another way on this config (in turn)"))
                    continue
                try:
                    variant = rewrite(t, way == "violate")
                except Skip as why:
                    out.append(Planned(c, kind, way, None, str(why)))
                    continue
                if variant.row and base.get(variant.row) == "FAIL":
                    out.append(Planned(c, kind, way, None, f"row {variant.row} fails on the base already"))
                    continue
                out.append(Planned(c, kind, way, variant, written=written(t, kind) if way == "violate" else ()))
    return tuple(out)


def params():
    if not BUNDLE.exists():
        reason = f"{BUNDLE} not present"
        if os.environ.get("CI", "").lower() == "true":
            return [pytest.param(None, id="no-shared-data")]  # fails: CI always has ../shared
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-shared-data")]
    out = []
    for p in plan():
        if p.variant is None:
            continue
        marks = [pytest.mark.xfail(reason=XFAIL[p.key], strict=True)] if p.key in XFAIL else []
        out.append(pytest.param(p, marks=marks, id="|".join(p.key)))
    return out


_LINE = re.compile(r"(?<=[\w./-]):\d+\b|\bline \d+\b|\blines \d+(?:-\d+)?\b")
_UNREAD = re.compile(r"\bcannot (?:read|decide|find)\b|<not fixed>")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def normal(reason: str, numbers: bool = False) -> str:
    """A reason with its line numbers (and, for a rewrite that changes the numbers a row names, all numbers)
    elided."""
    out = _LINE.sub(":#", reason)
    return _NUMBER.sub("#", out) if numbers else out


def judge(p: Planned) -> tuple[tuple[str, str, str], ...]:
    h = history()
    assert h is not None and p.variant is not None
    return rows_of(h.judge(p.config.pr, p.variant.snapshot))


def _adds_a_file(p: Planned) -> bool:
    assert p.variant is not None
    return any(p.config.snapshot.changed(path) is None and (f := p.variant.snapshot.changed(path)) is not None
               and f.status == "added" for path in p.variant.touched)


def bash_problem(v: Variant) -> str | None:
    """A rewritten script bash cannot parse: the rewrite, not the bot, would be wrong."""
    for path in v.touched:
        if path.endswith(".sh"):
            f = v.snapshot.changed(path)
            assert f is not None and f.head_text is not None
            done = subprocess.run(["bash", "-n"], input=f.head_text, text=True, capture_output=True)
            if done.returncode != 0:
                return f"{path}: bash -n: {done.stderr.strip()}"
    return None


def verdict_problem(p: Planned, rows: tuple[tuple[str, str, str], ...]) -> str | None:
    """What is wrong with the rows of a variant (None: as the rewrite says they must be)."""
    assert p.variant is not None
    if p.way == "preserve":
        numbers = p.kind == "draft-length"
        base = {r: (s, normal(m, numbers)) for r, s, m in p.config.rows}
        got = {r: (s, normal(m, numbers)) for r, s, m in rows}
        if _adds_a_file(p) and "lint" in base and "lint" in got:
            # A file the rewrite adds (an eval twin, a library) is linted like any: a twin repeats the lint
            # findings of the recipe it copies. The lint row keeps its status; checks 9-11 keep their reasons.
            got["lint"] = (got["lint"][0], base["lint"][1])
        changed = {r: got.get(r) for r in base if got.get(r) != base[r]}
        if changed:
            raw = {r: (s, m) for r, s, m in rows if r in changed}
            return f"rows changed: {raw} (base: { {r: base[r][0] for r in changed} })"
        return None
    row = next(((s, m) for r, s, m in rows if r == p.variant.row), None)
    if row is None or row[0] != "FAIL":
        return f"row {p.variant.row} is {row}"
    if not any(re.search(rf"{re.escape(path)}:\d+", row[1]) for path in p.variant.touched):
        return f"row {p.variant.row} FAILs without naming {' or '.join(p.variant.touched)}:LINE: {row[1]}"
    if _UNREAD.search(row[1]):
        return f"row {p.variant.row} FAILs for what it could not read, not for the violation: {row[1]}"
    if p.written and not any(re.search(rf"(?<![\d.]){re.escape(v)}(?![\d])", row[1]) for v in p.written):
        return f"row {p.variant.row} FAILs without naming the value written ({' or '.join(p.written)}): {row[1]}"
    return None


@pytest.mark.parametrize("p", params())
def test_rewrite(p: Planned | None) -> None:
    assert p is not None, "CI=true needs ../shared/fixtures/history"
    assert p.variant is not None
    assert bash_problem(p.variant) is None
    problem = verdict_problem(p, judge(p))
    assert problem is None, problem


def test_no_base_branch_documents_a_rate_spelling() -> None:
    """The rate spelling of the acceptance target is rewritten only where a base branch documents it: none of
    the window does (the day one does, this fails, and the spelling rewrite must learn it)."""
    if not BUNDLE.exists():
        pytest.skip(f"{BUNDLE} not present")
    h = history()
    assert h is not None
    readmes = {}
    for c in configs():
        shown = h.git.run("show", f"{c.snapshot.pr.base_sha}:golden_al_distribution/README.md", check=False)
        readmes[c.name] = shown.stdout.decode() if shown.returncode == 0 else ""
    assert sum(1 for text in readmes.values() if "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" in text) > 0
    assert {n: m.group(0) for n, text in readmes.items() if (m := RATE_KNOB.search(text))} == {}


def test_the_suite_covers_the_history() -> None:
    """≥300 variants from ≥25 real configs of all four engines, every kind both ways (one-way kinds one way);
    rewrites that cannot apply are counted, never hidden."""
    if not BUNDLE.exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {BUNDLE} is missing")
        pytest.skip(f"{BUNDLE} not present")
    planned = plan()
    run = [p for p in planned if p.variant is not None]
    used = {p.config.name for p in run}
    engines = {target(p.config).engine for p in run}
    ways = {(p.kind, p.way) for p in run}
    missing = [(k, w) for k in KINDS for w in WAYS if (k, w) not in ways and ONE_WAY.get(k, w) == w
               and (k, w) not in HISTORY_GAPS]
    skipped = Counter((p.kind, p.way, p.skipped) for p in planned if p.variant is None)
    report = "\n".join(f"{n:4} {k}/{w}: {why}" for (k, w, why), n in sorted(skipped.items()))
    assert len(run) >= MIN_VARIANTS, report
    assert len(used) >= MIN_CONFIGS
    assert set(ENGINES) <= engines, engines
    assert missing == [], report
    synthetic = {(f"synthetic:{e}", k, w) for e, k, w in (p.values for p in synthetic_params())}
    assert set(XFAIL) <= {p.key for p in run} | synthetic, "an XFAIL entry names no variant"


# --------------------------------------------------------------------------
# Synthetic configs, one per engine: the suite means something on a fresh clone without ../shared
# --------------------------------------------------------------------------

SYNTHETIC_CURVES = {
    "golden_al_distribution/glm5.2_mtp.yaml":
        "# key = num_speculative_tokens\nglm-5.2:\n  thinking_on:\n    3: 2.99\n    4: 3.35\n",
}
_HEADER = "#!/usr/bin/env bash\n# {what}\nset -euo pipefail\n\n"
SYNTHETIC = {  # engine -> (path, head text): agentic MTP configs pinned at the golden AL (glm5.2, 3 tokens)
    "vllm": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_vllm_mtp.sh", _HEADER + (
        'vllm serve "$MODEL" --tensor-parallel-size 8 \\\n'
        "    --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 3, "
        "\"rejection_sample_method\": \"synthetic\", \"synthetic_acceptance_length\": 2.99}' \\\n"
        "    --port 8888 &\n"
        'vllm bench serve --model "$MODEL" --backend openai-chat --endpoint /v1/chat/completions --port 8888\n')),
    "sglang": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_sglang_mtp.sh", _HEADER + (
        "SPEC_ARGS=(\n    --speculative-algorithm EAGLE\n    --speculative-num-steps 3\n"
        "    --speculative-eagle-topk 1\n    --speculative-num-draft-tokens 4\n)\n"
        'if [ "${EVAL_ONLY:-false}" != "true" ]; then  # accuracy runs verify for real\n'
        "    export SGLANG_SIMULATE_ACC_LEN=2.99\n    export SGLANG_SIMULATE_ACC_METHOD=match-expected\nfi\n"
        'python3 -m sglang.launch_server --model-path "$MODEL" --tp 8 "${SPEC_ARGS[@]}" --port 8888 &\n'
        'python3 -m sglang.bench_serving --backend sglang-oai-chat --model "$MODEL" --port 8888\n')),
    "trtllm": ("benchmarks/single_node/agentic/glm5.2_fp4_b200_trt_mtp.sh", _HEADER + (
        "# TRT-LLM counts accepted draft tokens only: the golden AL 2.99 minus one.\n"
        "export TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.99\n"
        "cat > extra.yml <<EOF\nspeculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\nEOF\n"
        'trtllm-serve "$MODEL" --extra_llm_api_options extra.yml --port 8888 &\n'
        'aiperf profile --model "$MODEL" --endpoint-type chat --url localhost:8888\n')),
    "atom": ("benchmarks/single_node/agentic/glm5.2_fp4_mi355x_atom_mtp.sh", _HEADER + (
        'python3 -m atom.entrypoints.openai_server --model "$MODEL" --method mtp --num-speculative-tokens 3 '
        "--spec-decode-acceptance-length 2.99 --port 8888 &\n"
        'aiperf profile --model "$MODEL" --endpoint-type chat --url localhost:8888\n')),
}


def synthetic_target(engine: str) -> Target:
    from checks.snapshot import frozen_map
    from tests.builders import changed, snapshot

    path, head = SYNTHETIC[engine]
    base = head.replace("{what}", "an earlier version")
    head = head.replace("{what}", f"AgentX {engine} MTP, acceptance pinned at the golden AL")
    snap = snapshot(files=[changed(path, base, head)], policy=frozen_map(SYNTHETIC_CURVES))
    return Target(snap, path, engine, True, {"EVAL_ONLY": "false"}, ())


def synthetic_rows(snap) -> tuple[tuple[str, str, str], ...]:
    from checks.engine import evaluate
    from tests.metamorphic.history import RULES_UNDER_TEST

    return rows_of(evaluate(snap, RULES_UNDER_TEST))


def synthetic_params():
    out = []
    for engine in SYNTHETIC:
        t = synthetic_target(engine)
        for kind, rewrite in KINDS.items():
            for way in WAYS:
                try:
                    rewrite(t, way == "violate")
                except Skip:
                    continue
                key = (f"synthetic:{engine}", kind, way)
                marks = [pytest.mark.xfail(reason=XFAIL[key], strict=True)] if key in XFAIL else []
                out.append(pytest.param(engine, kind, way, marks=marks, id="|".join(key)))
    return out


@pytest.mark.parametrize("engine", list(SYNTHETIC))
def test_synthetic_configs_pass_as_written(engine: str) -> None:
    """The synthetic configs are what the rewrites start from: every row passes on them."""
    rows = synthetic_rows(synthetic_target(engine).snapshot)
    assert [(r, s) for r, s, _ in rows] == [("10", "PASS"), ("11", "PASS"), ("9", "PASS"), ("lint", "PASS")], rows


@pytest.mark.parametrize("engine,kind,way", synthetic_params())
def test_synthetic_rewrite(engine: str, kind: str, way: str) -> None:
    t = synthetic_target(engine)
    variant = KINDS[kind](t, way == "violate")
    assert bash_problem(variant) is None
    config = Config(0, t.path, "script", engine, True, (), (), t.snapshot, synthetic_rows(t.snapshot))
    p = Planned(config, kind, way, variant, written=written(t, kind) if way == "violate" else ())
    problem = verdict_problem(p, synthetic_rows(variant.snapshot))
    assert problem is None, problem


def test_synthetic_configs_cover_every_kind_both_ways() -> None:
    ways = {(kind, way) for _engine, kind, way in (p.values for p in synthetic_params())}
    missing = [(k, w) for k in KINDS for w in WAYS if (k, w) not in ways and ONE_WAY.get(k, w) == w
               and k not in ("master-env", "patch-site")]  # both need a master entry running the script
    assert missing == []
