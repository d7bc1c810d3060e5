"""HumanEval as a one-turn environment program: the sandbox runs this file, never the harness.

The harness passes one problem's ``program`` (prompt plus candidate code), ``test`` and
``entry_point`` as constructor arguments; ``step`` execs the candidate and the problem's
``check`` inside the sandbox worker and rewards 1.0 when every assertion passes.
"""


class HumanEvalEnv:
    """One HumanEval problem: the action is the candidate program, reward 1.0 if tests pass."""

    max_turns = 1

    def __init__(self, prompt="", program="", test="", entry_point=""):
        self.prompt, self.program = prompt, program
        self.test, self.entry_point = test, entry_point

    def reset(self, seed=None, options=None):
        return self.prompt, {}

    def step(self, action):
        # ``action`` is ignored when the harness already assembled the program, so the
        # candidate cannot smuggle a different test harness in through the action text.
        source = self.program or action
        ns = {"__name__": "__humaneval__"}
        try:
            exec(compile(source, "<candidate>", "exec"), ns)
            exec(compile(self.test, "<test>", "exec"), ns)
            ns["check"](ns[self.entry_point])
        except Exception as e:  # a failing candidate is a result, not a sandbox fault
            return "failed", 0.0, True, False, {"error": f"{type(e).__name__}: {e}"[:300]}
        return "passed", 1.0, True, False, {}
