"""Reading bash: the one place that knows the syntax of the benchmark scripts.

How a script is read (`Script(text)`, parsed once and cached by its text):

1. `tree`: tree-sitter-bash parses it, within a read budget (its error recovery can go quadratic on
   broken text); GitHub Actions expressions (`${{ ... }}`) are masked first, as the runner substitutes
   them before bash runs. A text tree-sitter gives up on is read line by line.
2. `reading`: from the positions of the nodes: comments, heredocs (their bodies as bash ends them),
   parameter expansions, and where logical lines end; `syntax` builds the statements (`Simple`, `If`,
   `Case`, `Loop`, `Group`, `Func`, `AndOr`, `Not`) and `words` the words (`Word`, `Part`).
3. Then it is read two ways, through one evaluator of words (`values.Evaluator`: parameters and their
   operators, `$((...))`, pure `$(...)`, field splitting; `builtins` computes `printf`, patterns, tests):

- As a program. `Script.launches(env)` runs `interpreter.Interpreter`, a small, total interpreter:
  assignments, arrays, `export`, `if`/`case`/loops, functions, `&&`/`||`, quoting, `${VAR:-default}`
  and `$((...))`; it returns every `vllm serve` / `python -m sglang.launch_server` command it reaches,
  each token with the line it was written on. `env` holds the variables the master config gives the
  script (MODEL, TP, EP_SIZE, DP_ATTENTION, ...); every other variable the script does not assign is
  *unknown*. A condition that depends on an unknown value is undecidable: both branches run, and a
  variable they set differently keeps every candidate value. `Script.exports()` lists the environment
  a script exports. Check 3 reads scripts this way (`checks/facts/serverargs.py`, `checks/rules/check03_recipe_link.py`).
  `Script.trace(env, path, watch)` runs it the same way and also follows strings run as code (`eval`,
  `bash -c`, the bodies of `$(...)`): it returns the launches, every command `watch` selects with each
  word's candidate values (a watch that reads a command's name only says so: `reads_first_field`; one
  whose caller reads of the calls only their names and lines, `reads_call_names`), and
  every script it runs (`bash FILE`, `source FILE`, `sbatch FILE`, behind `srun`/`nohup`/`exec`...;
  `commands`) with its PWD and environment. Checks 9 and 11 read benchmark clients and the scripts a
  launcher runs this way (`checks/facts/tracing.py`, `checks/facts/specdecode.py`).
- As lines (`lines`). `Script.lines` gives every physical line with its code (the comment cut where
  bash cuts it), the heredoc it is the body of (its delimiter, whether it is quoted, whether the body
  is a diff or python), and `expanded`: the code with each variable whose value the script fixes
  substituted. `Script.commands` joins lines into the logical lines bash reads, `Script.assignments`
  lists every variable the script sets, `Script.simple_commands` every command with its words. Checks
  8-11 read scripts this way (`checks/rules/check08_architecture.py`, `checks/rules/check09_chat_template.py`,
  `checks/rules/check10_engine_patches.py`, `checks/facts/patch_sites.py`, `checks/facts/spec_settings.py`, `checks/facts/specdecode.py`).

The two ways look variables up differently on purpose. The interpreter follows the control flow for one
set of runner variables, because check 3 compares the server args of each search-space point. The line
readers need one value per variable wherever it is used (`script.FixedValues`): a variable is fixed when
every assignment in the script gives it the same value, whatever branch it sits in.

PR content is never executed: this reads scripts as text. Parsing, work, nesting and recursion are
capped, so hostile input ends as unknown values, never an exception or an unbounded loop.
"""

from .builtins import UNKNOWN
from .interpreter import Call, Launch, Run, Trace, reads_call_names, reads_first_field
from .lines import Heredoc, ShellCommand, ShellLine, heredoc_bodies, line_code
from .script import Assignment, Script, SimpleCommand
from .tree import MAX_SCRIPT
from .values import Token

__all__ = ["MAX_SCRIPT", "UNKNOWN", "Assignment", "Call", "Heredoc", "Launch", "Run", "Script", "ShellCommand",
           "ShellLine", "SimpleCommand", "Token", "Trace", "heredoc_bodies", "line_code",
           "reads_call_names", "reads_first_field"]
