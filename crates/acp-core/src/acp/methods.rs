//! ACP v1 method names (from the official `meta.json`).

// Client → agent.
pub const INITIALIZE: &str = "initialize";
pub const AUTHENTICATE: &str = "authenticate";
pub const LOGOUT: &str = "logout";
pub const SESSION_NEW: &str = "session/new";
pub const SESSION_LOAD: &str = "session/load";
pub const SESSION_LIST: &str = "session/list";
pub const SESSION_RESUME: &str = "session/resume";
pub const SESSION_FORK: &str = "session/fork";
pub const SESSION_CLOSE: &str = "session/close";
pub const SESSION_DELETE: &str = "session/delete";
pub const SESSION_SET_MODE: &str = "session/set_mode";
pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
pub const SESSION_PROMPT: &str = "session/prompt";
pub const SESSION_CANCEL: &str = "session/cancel";

// Agent → client.
pub const SESSION_UPDATE: &str = "session/update";
pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
pub const TERMINAL_CREATE: &str = "terminal/create";
pub const TERMINAL_OUTPUT: &str = "terminal/output";
pub const TERMINAL_RELEASE: &str = "terminal/release";
pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
pub const TERMINAL_KILL: &str = "terminal/kill";
pub const ELICITATION_CREATE: &str = "elicitation/create";
pub const ELICITATION_COMPLETE: &str = "elicitation/complete";

// Both directions.
pub const CANCEL_REQUEST: &str = "$/cancel_request";

pub const TERMINAL_METHODS: [&str; 5] = [
    TERMINAL_CREATE,
    TERMINAL_OUTPUT,
    TERMINAL_RELEASE,
    TERMINAL_WAIT_FOR_EXIT,
    TERMINAL_KILL,
];

/// Extension methods start with an underscore.
pub fn is_extension(method: &str) -> bool {
    method.starts_with('_')
}
