import random

from spade_env import ToolEnv


class ConfigTraceEnv(ToolEnv):
    """File-system lookup: follow configuration files to find a service's setting.

    A small virtual file tree holds service configs and environment profiles.
    A service's config names the profile directory and the key it reads; the
    profile for the asked environment may inherit missing keys from a base
    profile via an 'extends' line. Tools: list_dir, read_file, and a search tool.
    Answer the resolved value with <answer>VALUE</answer>."""

    max_turns = 10

    SERVICES = ["billing", "search", "gateway", "ledger", "mailer", "reports"]
    ENVS = ["production", "staging", "testing"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.files = {}
        profile_dir = rng.choice(["/etc/profiles", "/opt/env", "/srv/conf/env"])
        services = rng.sample(self.SERVICES, 4)
        self.service = services[0]
        self.env_name = rng.choice(self.ENVS[:2])
        keys = {s: f"{s[:3]}_{rng.choice(['port', 'workers', 'timeout'])}_{rng.randint(1, 9)}"
                for s in services}
        for s in services:
            self.files[f"/srv/{s}/service.ini"] = (
                f"[service]\nname = {s}\nprofile_dir = {profile_dir}\nsetting_key = {keys[s]}\n")
        base = {k: str(rng.randint(100, 9999)) for k in keys.values()}
        inherits = rng.random() < 0.5
        profiles = {}
        for env in self.ENVS:
            values = {k: str(rng.randint(100, 9999)) for k in keys.values()}
            if env == self.env_name and inherits:
                del values[keys[self.service]]  # the value must come from the base profile
            profiles[env] = values
        for env, values in profiles.items():
            lines = ["extends = base"] if env == self.env_name and inherits else []
            lines += [f"{k} = {v}" for k, v in sorted(values.items())]
            self.files[f"{profile_dir}/{env}.ini"] = "\n".join(lines) + "\n"
        self.files[f"{profile_dir}/base.ini"] = "\n".join(f"{k} = {v}" for k, v in sorted(base.items())) + "\n"
        key = keys[self.service]
        self.expected_answer = profiles[self.env_name].get(key, base[key])
        self.profile_path = f"{profile_dir}/{self.env_name}.ini"
        self.base_path = f"{profile_dir}/base.ini"
        self.inherits = inherits
        obs = (f"Which value does the '{self.service}' service read for its setting in the "
               f"{self.env_name} environment? Services live under /srv; start from the service's "
               "config file.\n" + self.describe_tools()
               + "\nAnswer with <answer>VALUE</answer>.")
        return obs, {}

    def tool_list_dir(self, path: str) -> list:
        """Names of the files and directories directly inside a directory.

        Args:
            path: an absolute directory path, e.g. /srv
        """
        prefix = path.rstrip("/") + "/"
        names = {f[len(prefix):].split("/")[0] for f in self.files if f.startswith(prefix)}
        if not names:
            raise ValueError(f"no such directory: {path}")
        return sorted(names)

    def tool_read_file(self, path: str) -> str:
        """The full text of a file.

        Args:
            path: an absolute file path
        """
        if path not in self.files:
            raise ValueError(f"no such file: {path}")
        return self.files[path]

    def tool_search(self, text: str) -> list:
        """Paths of files whose text contains the given string (at most five).

        Args:
            text: the string to look for
        """
        if len(text.strip()) < 3:
            raise ValueError("search text must have at least 3 characters")
        return sorted(p for p, body in self.files.items() if text in body)[:5]

    def hint(self):
        return ("Read the service's own config to learn the profile directory and key, read "
                "the environment's profile, and if the key is missing there follow its "
                "'extends' line to the base profile.")

    def solution(self):
        calls = [{"name": "read_file", "arguments": {"path": f"/srv/{self.service}/service.ini"}},
                 {"name": "read_file", "arguments": {"path": self.profile_path}}]
        if self.inherits:
            calls.append({"name": "read_file", "arguments": {"path": self.base_path}})
        return calls + [self.expected_answer]
