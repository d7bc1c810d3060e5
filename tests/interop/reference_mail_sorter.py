# Reference-code single-task tool-use form: ToolUseBaseEnv and random are used without
# being imported (the reference loader injects them), explicit self._tools schemas,
# reset(seed) without options, and a prose solution() ending in "ANSWER:".
from typing import Tuple


class MailSorterEnv(ToolUseBaseEnv):
    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        if seed is not None:
            random.seed(seed)
        senders = random.sample(["kim", "lou", "max", "ned", "ola", "pia"], 4)
        self._state = {
            "folder": "inbox",
            "folders": {"inbox": {f"m{i}": s for i, s in enumerate(senders)}, "archive": {}},
        }
        self.target = senders[random.randint(0, 3)]
        self._tools = {
            "open_folder": {"description": "Open a mail folder", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
            "list_mail": {"description": "List mail ids and senders in the open folder", "parameters": {"type": "object", "properties": {}}},
            "move": {"description": "Move a mail from the open folder to another folder", "parameters": {"type": "object", "properties": {"mail_id": {"type": "string"}, "to": {"type": "string"}}, "required": ["mail_id", "to"]}},
        }
        self.mail_id = next(k for k, v in self._state["folders"]["inbox"].items() if v == self.target)
        self._expected_answer = self.mail_id
        return (f"TASK: archive the mail from {self.target} and answer its id with "
                "<answer>ID</answer>." + self._obs_suffix(), {})

    def tool_open_folder(self, name=""):
        if name not in self._state["folders"]:
            return f"Error: no folder {name}"
        self._state["folder"] = name
        return f"Opened {name}"

    def tool_list_mail(self):
        return json.dumps(self._state["folders"][self._state["folder"]])

    def tool_move(self, mail_id="", to=""):
        here = self._state["folders"][self._state["folder"]]
        if mail_id not in here or to not in self._state["folders"]:
            return "Error: cannot move"
        self._state["folders"][to][mail_id] = here.pop(mail_id)
        return f"Moved {mail_id} to {to}"

    def _check_answer(self, answer):
        return answer.strip() == self.mail_id and self.mail_id in self._state["folders"]["archive"]

    def solution(self) -> str:
        return (f"1. list_mail() 2. move(mail_id='{self.mail_id}', to='archive') "
                f"ANSWER: {self.mail_id}")
