"""`hfsiamese serve --mount_app PATH`: the `hfsiamese app` page (`app_page.build_app`) mounted on the service's own
server, over the service's loaded index and behind its keys. The page's actions run on the service's index thread
(`ServiceRuntime.on_index_thread`), between its batches and writes, as every other use of the index does."""

from __future__ import annotations

from typing import Any

from hfsiamese.cli.app_groups import GroupCells
from hfsiamese.cli.app_page import DuplicateSearch, build_app
from hfsiamese.service.app import ServiceRuntime
from hfsiamese.service.page_sign_in import PageSignIn
from hfsiamese.service.service import DuplicateService
from hfsiamese.utils.extras import install_hint


class ServiceGroupCells(GroupCells):
    """The Groups tab's list, read on the service's index thread."""

    def __init__(self, index: Any, runtime: ServiceRuntime) -> None:
        super().__init__(index)
        self.runtime = runtime

    def largest(self, *args: Any, **kwargs: Any) -> str:
        return self.runtime.on_index_thread(super().largest, *args, **kwargs)


class ServicePage(DuplicateSearch):
    """The page's search and pair check over the service's index and models, run on its index thread."""

    def __init__(self, service: DuplicateService, runtime: ServiceRuntime) -> None:
        settings = runtime.settings
        super().__init__(
            service.index.model, service.index, k=settings.default_k, max_chars=settings.limits.max_chars,
            cross_encoder=service.cross_encoder, rerank_k=service.rerank_k,
        )  # fmt: skip
        self.runtime = runtime
        self.group_cells = ServiceGroupCells(service.index, runtime)

    def search(self, question: str | None) -> tuple[str, str]:
        return self.runtime.on_index_thread(super().search, question)

    def check_pair(self, first: str | None, second: str | None) -> str:
        return self.runtime.on_index_thread(super().check_pair, first, second)


def mount_page(app: Any, service: DuplicateService, path: str) -> None:
    """Mount the page at `path` on `app` (`create_app`'s, over `service`). Where the service has keys, the page
    answers a request that carries a key in a header, or a person who signed in at `path/sign-in` (`PageSignIn`);
    anything else gets 401, and a browser opening the page is sent to the sign-in form."""
    try:
        import gradio as gr
    except ImportError as err:
        raise ImportError(f"--mount_app needs gradio: {install_hint('app')}") from err
    runtime: ServiceRuntime = app.state.runtime
    sign_in = PageSignIn(runtime.keys, path) if runtime.keys.enabled else None
    if sign_in is not None:
        app.include_router(sign_in.router())  # before the mount, which would otherwise answer these paths itself
    blocks = build_app(ServicePage(service, runtime))
    gr.mount_gradio_app(
        app, blocks, path=path, auth_dependency=sign_in.holder if sign_in is not None else None, show_error=False,
        footer_links=["api"],
    )  # fmt: skip


__all__ = ["ServiceGroupCells", "ServicePage", "mount_page"]
