/// One libyaml event, reduced to what the manifest reader needs.
struct YAMLEvent {
    enum Kind {
        case streamStart, streamEnd, documentStart, documentEnd
        case mappingStart, mappingEnd, sequenceStart, sequenceEnd
        case scalar, alias
    }

    var kind: Kind
    /// 1-based position of the event's start.
    var line: Int
    var column: Int
    /// The scalar's text (scalars only).
    var value: String
    /// Plain (unquoted) scalar: subject to YAML's null/int resolution.
    var isPlain: Bool
    var hasAnchor: Bool

    /// A plain scalar that YAML resolves to null (`~`, `null`, empty).
    var isNull: Bool {
        kind == .scalar && isPlain && (value.isEmpty || value == "~" || value == "null" || value == "Null" || value == "NULL")
    }
}

/// A libyaml parse error at a 1-based position.
struct YAMLSyntaxError: Error {
    let line: Int
    let column: Int
    let message: String
}
