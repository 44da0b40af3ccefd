"""The one place that talks to the model hub, through `huggingface_hub`.

It honours `HF_ENDPOINT` and `HF_TOKEN` as `huggingface_hub` does. Downloads resume
across processes: `hf_hub_download` writes each attempt to a fresh, process-unique
temporary file and drops it on failure, so a pull killed midway would start over. We
keep the partial file ourselves (`<name>.part`) and hand it to `huggingface_hub`'s own
`http_get`, which continues it with a range request. Progress is reported in bytes.
"""

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from huggingface_hub import HfApi, hf_hub_url
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError
from huggingface_hub.file_download import http_get
from huggingface_hub.utils._headers import build_hf_headers
from tqdm.auto import tqdm

from skulk.models.store.hub_files import RemoteFile, RepoListing

ByteCounter = Callable[[int], None]


# huggingface_hub raises the errors of whichever HTTP library it runs on (2.4: `httpx2`, not
# `httpx`) besides its own; this module is its one boundary, so every failure of a hub call
# becomes HubUnavailable here, naming the error, and never escapes as a crash.


class HubUnavailable(RuntimeError):
    """The hub could not be reached or refused; the message says which and what to do."""


class UnknownRepository(ValueError):
    """The hub has no such repository (or it is private and no token was given)."""


def list_repository(repo: str) -> RepoListing:
    """The repository's files with sizes and hashes, at its current commit; config and
    sizes are known before any weight is fetched."""
    try:
        info = HfApi(endpoint=_endpoint()).model_info(repo, files_metadata=True)
    except RepositoryNotFoundError as error:
        raise UnknownRepository(f"the hub has no repository {repo!r} (if it is private or "
                                "gated, set HF_TOKEN)") from error
    except Exception as error:  # whatever the hub library's HTTP layer raises (see above)
        raise HubUnavailable(f"cannot list {repo} on the hub: {error}") from error
    if info.sha is None:
        raise HubUnavailable(f"the hub returned no commit for {repo}")
    files = tuple(
        RemoteFile(name=s.rfilename, size_bytes=s.size or 0,
                   sha256=s.lfs.sha256 if s.lfs is not None else None, git_sha1=s.blob_id)
        for s in info.siblings or [])
    return RepoListing(repo=repo, revision=info.sha, files=files)


PART_SUFFIX = ".part"


def download_file(listing: RepoListing, file: RemoteFile, directory: Path,
                  on_bytes: ByteCounter) -> Path:
    """Fetch one file of the listing's commit into `directory`, continuing its `.part`
    file when an earlier pull left one."""
    target = directory / file.name
    partial = target.with_name(target.name + PART_SUFFIX)
    target.parent.mkdir(parents=True, exist_ok=True)
    url = hf_hub_url(listing.repo, file.name, revision=listing.revision, endpoint=_endpoint())
    with partial.open("ab") as sink:
        resume = sink.tell()
        if resume > file.size_bytes:  # not this file's bytes: start over
            sink.truncate(0)
            resume = 0
        on_bytes(resume)
        try:
            http_get(url, sink, resume_size=resume, headers=build_hf_headers(),
                     expected_size=file.size_bytes, displayed_filename=file.name,
                     tqdm_class=_counting_bar(on_bytes))
        except HfHubHTTPError as error:
            raise HubUnavailable(f"cannot fetch {file.name} of {listing.repo}: {error}"
                                 ) from error
        except OSError:
            raise  # this disk's (a full one is told apart by the pull)
        except Exception as error:  # whatever the hub library's HTTP layer raises
            raise HubUnavailable(f"cannot fetch {file.name} of {listing.repo}: {error}"
                                 ) from error
    partial.replace(target)
    return target


def _endpoint() -> str | None:
    # Read at each call, not at import: huggingface_hub fixes some URLs when imported.
    return os.environ.get("HF_ENDPOINT") or None


def _counting_bar(on_bytes: ByteCounter) -> type[tqdm]:
    """A silent tqdm that forwards byte counts: how `huggingface_hub` reports progress."""

    class CountingBar(tqdm):  # type: ignore[misc]  # tqdm is untyped
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            on_bytes(int(n or 0))
            return None

    return CountingBar
