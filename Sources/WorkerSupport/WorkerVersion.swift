/// The version of this build: `worker --version`, the JSON report and the metrics say it.
public enum WorkerVersion {
    public static let current = "0.5.0"
}
