# Reference-code multi-turn tool-use form (BFCL style): _user_messages revealed one at a
# time, _message_criteria over self._state, the program's own _advance_if_done() called
# inside every tool, answer "done", and `random` used without being imported.


class LibraryLoansMTEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        self.turn_count = 0
        self._call_history = []
        if seed is not None:
            random.seed(seed)
        titles = random.sample(["Dune", "Emma", "Ulysses", "Beloved", "Walden", "Middlemarch"], 4)
        self._state = {"shelf": list(titles), "loans": [], "reader": None, "last_listed": None}
        self._tools = {
            "find": {"description": "Is a title on the shelf", "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}},
            "card": {"description": "Open a reader card", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
            "lend": {"description": "Lend a book to the open card", "parameters": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}},
            "loans": {"description": "List the open card's loans", "parameters": {"type": "object", "properties": {}}},
        }
        self.reader = random.choice(["Ada", "Bo", "Cy"])
        self.book = titles[random.randint(0, 3)]
        self._user_messages = [
            f"Open the card of reader {self.reader}.",
            f"Lend them the book {self.book}.",
            "Show me their loans.",
        ]
        self._message_criteria = [
            lambda s: s["reader"] == self.reader,
            lambda s: self.book in s["loans"],
            lambda s: s["last_listed"] == self.reader,
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        return (self._user_messages[0], {})

    def _advance_if_done(self):
        if self._current_msg >= len(self._user_messages):
            return ""
        if self._message_criteria[self._current_msg](self._state):
            self._current_msg += 1
            if self._current_msg >= len(self._user_messages):
                return "\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>."
            return f"\n\n[NEW INSTRUCTION] {self._user_messages[self._current_msg]}"
        return ""

    def _check_answer(self, answer):
        return answer.strip().lower() == "done" and self._current_msg >= len(self._user_messages)

    def tool_find(self, title=""):
        return ("on the shelf" if title in self._state["shelf"] else "not here") + self._advance_if_done()

    def tool_card(self, name=""):
        self._state["reader"] = name
        return f"Card of {name} open" + self._advance_if_done()

    def tool_lend(self, title=""):
        if self._state["reader"] is None or title not in self._state["shelf"]:
            return "Error: cannot lend" + self._advance_if_done()
        self._state["shelf"].remove(title)
        self._state["loans"].append(title)
        return f"Lent {title}" + self._advance_if_done()

    def tool_loans(self):
        self._state["last_listed"] = self._state["reader"]
        return json.dumps(self._state["loans"]) + self._advance_if_done()

    def solution(self):
        return (f"1. card(name='{self.reader}') 2. find(title='{self.book}') "
                f"3. lend(title='{self.book}') 4. loans() 5. <answer>done</answer>")
