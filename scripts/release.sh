#!/usr/bin/env bash
# Makes a release from a tagged commit, in one command:
#   WORKER_RELEASE_MINISIGN_KEY=FILE WORKER_RELEASE_SSH_KEY=FILE \
#     scripts/release.sh --base-url https://github.com/OWNER/worker/releases/download/v0.5.0/
#
# In dist/: the Debian package (scripts/make-deb.sh), the static tarball
# worker-VERSION-linux-ARCH.tar.gz (the binary, the manual, bash/zsh/fish completions, README),
# SHA256SUMS of the two with its signatures SHA256SUMS.minisig (minisign) and SHA256SUMS.sig (SSH,
# namespace "file"), and worker-VERSION.yaml: a manifest of the two files at --base-url, signed the
# same two ways in worker's own namespace, which `worker sync` verifies (docs/RELEASING.md). The
# release's lines are added to packaging/release-checksums.txt (commit them: the action installs a
# version only when the commit it runs from lists it).
#
# The commit must be clean and tagged vVERSION, VERSION being `worker --version`'s. The keys are
# unencrypted secret keys (minisign -G -W; ssh-keygen -t ed25519 -N ''); the signatures are
# checked against the public keys in packaging/release-keys/ before the release is called made.
# Every time in the files is the commit's (SOURCE_DATE_EPOCH), so two builds of one commit give the
# same bytes; --reproduce builds it a second time in a clone elsewhere and compares the two
# (dist/REPRODUCIBILITY.txt lists what differs and why, if anything does). --unsigned makes the
# files only; --sign-only signs what an --unsigned run made (the release workflow builds without
# the keys in its environment, then signs).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "release: $*" >&2; exit 1; }

base_url=""
reproduce=false
unsigned=false
sign_only=false
while (($#)); do
  case "$1" in
    --base-url) base_url=${2:?--base-url needs a URL}; shift 2 ;;
    --reproduce) reproduce=true; shift ;;
    --unsigned) unsigned=true; shift ;;
    --sign-only) sign_only=true; shift ;;
    *) fail "unknown argument $1 (--base-url URL, --reproduce, --unsigned, --sign-only)" ;;
  esac
done
[ -n "$base_url" ] || fail "--base-url URL: where the release's files will be downloaded from (the signed manifest names them there)"
[[ $base_url == */ ]] || base_url+=/

[ -z "$(git status --porcelain --untracked-files=normal)" ] || fail "the work tree is not clean: a release is made from a commit as it is"
version="$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/WorkerSupport/WorkerVersion.swift)"
tag="v$version"
[ "$(git rev-parse HEAD)" = "$(git rev-parse -q --verify "refs/tags/$tag^{commit}" || true)" ] \
  || fail "HEAD is not tagged $tag (the version in Sources/WorkerSupport/WorkerVersion.swift)"
if ! $unsigned; then
  minisign_key="${WORKER_RELEASE_MINISIGN_KEY:?set WORKER_RELEASE_MINISIGN_KEY to the minisign secret key}"
  ssh_key="${WORKER_RELEASE_SSH_KEY:?set WORKER_RELEASE_SSH_KEY to the SSH secret key}"
  for public in packaging/release-keys/minisign.pub packaging/release-keys/allowed_signers; do
    [ -s "$public" ] || fail "no $public: the public keys users check the release with are committed first"
  done
  command -v minisign >/dev/null || fail "minisign is not installed"
fi

# Every time in the release is the commit's; nothing in it names the folder it was built in.
SOURCE_DATE_EPOCH="$(git log -1 --format=%ct)"
export SOURCE_DATE_EPOCH TZ=UTC LC_ALL=C
umask 022
export WORKER_SCRATCH="${WORKER_SCRATCH:-.build-release}"
binary="$(swift build -c release --static-swift-stdlib --product worker --scratch-path "$WORKER_SCRATCH" --show-bin-path)/worker"
arch="$(uname -m)"
name="worker-$version-linux-$arch"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# The package, the tarball, SHA256SUMS.
make_files() {
  rm -rf dist && mkdir dist
  bash scripts/make-deb.sh
  [ "$("$binary" --version | awk '{ print $NF }')" = "$version" ] || fail "the binary does not say version $version"

  root="$stage/$name"
  install -d "$root/bin" "$root/share/man/man1" "$root/share/bash-completion/completions" \
    "$root/share/zsh/site-functions" "$root/share/fish/vendor_completions.d"
  bash scripts/lib/strip-release.sh "$binary" "$root/bin/worker"
  install -m 0644 docs/worker.1 "$root/share/man/man1/worker.1"
  "$binary" completion bash >"$root/share/bash-completion/completions/worker"
  "$binary" completion zsh >"$root/share/zsh/site-functions/_worker"
  "$binary" completion fish >"$root/share/fish/vendor_completions.d/worker.fish"
  install -m 0644 README.md "$root/README.md"
  chmod 0644 "$root"/share/*/*/* "$root"/share/man/man1/*
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$stage" -cf - "$name" | gzip -9n >"dist/$name.tar.gz"

  (cd dist && sha256sum -- *.deb *.tar.gz >SHA256SUMS)
  echo "built:" && sed 's/^/  /' dist/SHA256SUMS
}

# SHA256SUMS and the release manifest, signed and checked; the release's lines recorded.
sign_files() {
  # SHA256SUMS, signed: minisign (its trusted comment names the release) and SSH (namespace "file",
  # as `ssh-keygen -Y sign` documents for files).
  minisign -S -s "$minisign_key" -m dist/SHA256SUMS -t "worker $version SHA256SUMS" -c "worker $version" </dev/null >/dev/null
  ssh-keygen -q -Y sign -f "$ssh_key" -n file dist/SHA256SUMS </dev/null
  signer="$(awk 'NF && $1 !~ /^#/ { print $1; exit }' packaging/release-keys/allowed_signers)"
  minisign -V -q -p packaging/release-keys/minisign.pub -m dist/SHA256SUMS \
    || fail "SHA256SUMS.minisig does not verify with packaging/release-keys/minisign.pub"
  ssh-keygen -q -Y verify -f packaging/release-keys/allowed_signers -I "$signer" -n file -s dist/SHA256SUMS.sig <dist/SHA256SUMS \
    >/dev/null || fail "SHA256SUMS.sig does not verify for $signer with packaging/release-keys/allowed_signers"

  # The same files as a worker manifest at --base-url, signed in worker's namespace: `worker sync` of
  # it with the release keys downloads and checks each (the serial is the commit's time: a later
  # release is accepted after an earlier one, never the other way).
  files="$stage/files"
  mkdir "$files"
  cp "dist/worker_${version}_"*.deb "dist/$name.tar.gz" "$files/"
  "$binary" manifest "$files" --base-url "$base_url" --name "worker-$version" --serial "$SOURCE_DATE_EPOCH" \
    -o "dist/worker-$version.yaml"
  minisign -S -s "$minisign_key" -m "dist/worker-$version.yaml" -t "worker $version manifest" -c "worker $version" </dev/null >/dev/null
  ssh-keygen -q -Y sign -f "$ssh_key" -n worker-manifest "dist/worker-$version.yaml" </dev/null

  # The lines the action checks a version's package against.
  while read -r sum file; do
    grep -q "  $file\$" packaging/release-checksums.txt || echo "$sum  $file" >>packaging/release-checksums.txt
  done <dist/SHA256SUMS
  echo "signed: dist/SHA256SUMS.minisig dist/SHA256SUMS.sig dist/worker-$version.yaml(.minisig, .sig)"
  echo "recorded in packaging/release-checksums.txt: commit it, then attach dist/* to the release $tag"
}

if $sign_only; then
  [ -s dist/SHA256SUMS ] || fail "no dist/SHA256SUMS: make the files first (--unsigned)"
  (cd dist && sha256sum --check --strict --quiet SHA256SUMS) || fail "dist/ does not hold the files SHA256SUMS lists"
else
  make_files
fi
$unsigned || sign_files

if $reproduce; then
  again="$(mktemp -d)/worker-again"
  git clone -q --no-local . "$again"
  git -C "$again" checkout -q "$tag"
  (cd "$again" && bash scripts/release.sh --unsigned --base-url "$base_url")
  {
    echo "Two builds of $tag ($(git rev-parse HEAD)): $PWD and $again, $(date -u +%Y-%m-%d)."
    same=true
    for file in "dist/worker_${version}_"*.deb "dist/$name.tar.gz"; do
      if cmp -s "$file" "$again/$file"; then
        echo "equal: $(basename "$file") ($(sha256sum <"$file" | cut -c1-16)…)"
      else
        same=false
        echo "differs: $(basename "$file")"
        bash scripts/lib/release-diff.sh "$file" "$again/$file" | sed 's/^/  /'
      fi
    done
    $same && echo "The two builds are the same bytes."
  } | tee dist/REPRODUCIBILITY.txt
fi
