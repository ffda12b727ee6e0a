import WorkerFetch

/// The kinds of URL beyond http(s) and files, one folder each beside this file: a kind's URLs
/// (`URLKind`) and its access (`KindAccess`). A kind is added by its folder and its line here.
public enum Kinds {
    public static let all: [any KindAccess] = [
        S3Access(),
        RegistryAccess(),
        SFTPAccess(),
    ]

    /// Makes every kind known to the layers that parse and reach URLs; once, as the program
    /// starts (again: the same kinds).
    public static func install() {
        KindAccesses.install(all)
    }
}
