#if canImport(Testing)
    import Testing

    extension Trait where Self == TimeLimitTrait {
        /// The one time limit of every suite: it catches a test that hangs, not a slow one. The suite
        /// starts its ~500 tests at once on the machine's cores, so any test may take as long as the
        /// whole suite (4.5 to 5 minutes of wall time on a slow two-core machine): a limit near that
        /// fails tests that only waited for a core.
        public static var hangLimit: Self { .timeLimit(.minutes(15)) }
    }
#endif
