from hypothesis import given, HealthCheck, settings
from test_fuzz import FuzzCase, queries, summary
import os


class DeepFuzz(FuzzCase):
    def test_deep(self):
        self.n = 0
        try:
            self.generated()
            print("DEEP EXAMPLES", self.n)
        except BaseExceptionGroup as group:
            raise AssertionError(summary(group)) from None

    @settings(
        max_examples=int(os.environ.get("DEEP", "600")),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=True,
    )
    @given(query=queries)
    def generated(self, query):
        self.n += 1
        self.check(query)
