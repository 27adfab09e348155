/// JSON-RPC error codes used by this client (the numbers are the spec's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode;

impl ErrorCode {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// LSP/ACP: the request was cancelled (`$/cancel_request`).
    pub const REQUEST_CANCELLED: i64 = -32800;
}
