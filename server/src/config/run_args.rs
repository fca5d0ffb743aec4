//! `anteroom run`'s options: the run, the session it takes, and how its agent is run (a command, Codex through
//! its app server, an ACP agent).

use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Run in this session (created when it does not exist); refused while another run there is live.
    #[arg(long)]
    pub session: Option<String>,
    /// The session's title (default: the command line).
    #[arg(long)]
    pub title: Option<String>,
    /// Name the MCP server the environment block's URLs are for, so banners name it.
    #[arg(long)]
    pub server_name: Option<String>,
    /// Anteroom's URL, as this machine reaches it.
    #[arg(long, env = "ANTEROOM_URL")]
    pub url: String,
    /// An API key that may register sessions (admin).
    #[arg(long, env = "ANTEROOM_API_KEY", hide_env_values = true)]
    pub api_key: String,
    /// The hooks' timeout in seconds (Anteroom answers before it).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(10..=86_400))]
    pub hook_timeout: u64,
    /// When Anteroom refuses the run or cannot be reached, start the agent anyway, with hooks that refuse every
    /// call that would ask a person, saying why (default: start nothing).
    #[arg(long, conflicts_with_all = ["codex", "acp"])]
    pub offline_ok: bool,
    /// Run Codex through its app server: the words after `--` are the prompt, and Codex's own approvals and
    /// its MCP servers' elicitations are asked in the session (docs/runs.md#codex-through-its-app-server).
    #[arg(long, conflicts_with = "acp")]
    pub codex: bool,
    /// Run an Agent Client Protocol agent with Anteroom as its host: after `--`, the agent's command (`gemini
    /// --acp`, `opencode acp`, `copilot --acp --stdio`…) and then the prompt; its permission requests are asked
    /// in the session (docs/runs.md#agents-over-acp).
    #[arg(long)]
    pub acp: bool,
    /// With --codex: the model (default: Codex's configured one).
    #[arg(long, short = 'm', requires = "codex")]
    pub model: Option<String>,
    /// With --codex: the sandbox (default: Codex's configured one).
    #[arg(long, short = 's', requires = "codex",
          value_parser = ["read-only", "workspace-write", "danger-full-access"])]
    pub sandbox: Option<String>,
    /// With --codex: when Codex asks: `untrusted` (every command it does not know to be safe) or `on-request`
    /// (what the model asks to run outside the sandbox). Every question goes to the session.
    #[arg(long = "ask-for-approval", short = 'a', default_value = "untrusted",
          value_parser = ["untrusted", "on-request"])]
    pub ask_for_approval: String,
    /// With --codex: a Codex setting, `key=value`, passed on as `codex app-server -c` (repeatable).
    #[arg(long = "config", short = 'c', requires = "codex")]
    pub codex_config: Vec<String>,
    /// With --codex: Codex's program.
    #[arg(long, env = "ANTEROOM_CODEX", default_value = "codex")]
    pub codex_program: String,
    /// The agent's command and its arguments after `--` (with --codex: the prompt; with --acp: the agent's
    /// command, then the prompt).
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}
