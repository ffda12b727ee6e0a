/// `${VAR}` in a header value, replaced by the environment variable's value (manifest headers,
/// `--remote-header`). A variable that is not set is named in the problem, never a value.
public enum VariableExpansion {
    public enum Problem: Error, Equatable {
        case unclosed
        case unset(String)
        /// A variable the operator did not name (a remote manifest reads only `--manifest-env` ones).
        case unnamed(String)

        public var message: String {
            switch self {
            case .unclosed: "'${' without a closing '}'"
            case .unset(let name): "environment variable '\(Redact.short(name))' is not set"
            case .unnamed(let name):
                "a remote manifest reads no environment variable the operator did not name: '\(Redact.short(name))' "
                    + "(give --manifest-env \(Redact.short(name)) to allow it)"
            }
        }
    }

    /// `allowed`, when given, names the only variables that may be read.
    public static func expand(_ text: String, environment: [String: String], allowed: Set<String>? = nil) -> Result<String, Problem> {
        var value = ""
        var rest = Substring(text)
        while let open = rest.firstRange(of: "${") {
            value += rest[..<open.lowerBound]
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else { return .failure(.unclosed) }
            let variable = String(rest[open.upperBound..<close])
            if let allowed, !allowed.contains(variable) { return .failure(.unnamed(variable)) }
            guard let replacement = environment[variable] else { return .failure(.unset(variable)) }
            value += replacement
            rest = rest[rest.index(after: close)...]
        }
        return .success(value + rest)
    }
}
