"""Step 6's work: stream the live tests in a thread worker, one message per `Measurement`."""

from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING

from textual.worker import get_current_worker

from strixwizard.tui import live_jobs
from strixwizard.tui.messages import MeasurementArrived, TestsEnded
from strixwizard.tui.test_views import panel_key, spark_points

if TYPE_CHECKING:
    from strixwizard.tui.app import WizardApp

MAX_SPARK = 120  # points kept per panel across runs


class LiveFlow:
    def __init__(self, app: WizardApp) -> None:
        self.app = app
        self.stopper = live_jobs.Stopper()
        self.started = 0.0

    def start(self) -> None:
        session = self.app.session
        discovery = session.discovery
        if discovery is None or session.testing:
            return
        site = discovery.site
        session.test_run += 1
        run = session.test_run
        session.testing, session.cancelling = True, False
        session.test_results, session.test_error, session.test_outcome = [], None, None
        session.test_pairs = live_jobs.planned_pairs(site)
        session.test_nodes = [spec.name for spec in site.nodes]
        session.test_seconds, session.test_file = None, None
        self.stopper = stopper = live_jobs.Stopper()
        self.started = time.monotonic()
        demo = session.is_demo
        nodes = discovery.nodes
        self.app.screen_changed()

        def work() -> None:
            worker = get_current_worker()
            started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            stream = live_jobs.test_stream(site, nodes, demo, stopper)
            results = []
            try:
                for measurement in stream:
                    if worker.is_cancelled:
                        break
                    results.append(measurement)
                    self.app.post_message(MeasurementArrived(run, measurement))
            except Exception as error:  # the reason, never a traceback
                self.app.post_message(TestsEnded(run, False, (
                    f"the tests stopped: {error!r}",
                    "check the nodes (step 2, r), then press r to run the tests again")))
                return
            finally:
                close = getattr(stream, "close", None)
                if callable(close):
                    close()  # the runner stops every program still running
            history = None
            if not demo and not worker.is_cancelled:
                history = live_jobs.store_in_history(site.name, started_at, results)
            self.app.post_message(TestsEnded(run, worker.is_cancelled, None, history))

        self.app.run_worker(work, thread=True, group="tests", exclusive=True, exit_on_error=False)

    def cancel(self) -> None:
        session = self.app.session
        if not session.testing or session.cancelling:
            return
        session.cancelling = True
        self.stopper.stop()
        self.app.workers.cancel_group(self.app, "tests")
        self.app.screen_changed()

    def arrived(self, message: MeasurementArrived) -> None:
        session = self.app.session
        if message.run != session.test_run or session.cancelling:
            return
        m = message.measurement
        session.test_results.append(m)
        points = session.test_spark.setdefault(panel_key(m), [])
        points.extend(spark_points(m))
        del points[:-MAX_SPARK]
        self.app.screen_changed()

    def ended(self, message: TestsEnded) -> None:
        session = self.app.session
        if message.run != session.test_run:
            return
        session.testing = False
        session.test_seconds = time.monotonic() - self.started
        session.test_outcome = "cancelled" if (message.cancelled or session.cancelling) else "done"
        session.cancelling = False
        session.test_error = message.error
        session.test_history = message.history
        self.app.screen_changed()
