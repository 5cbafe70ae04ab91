from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from datasets.models import Answer, CounterfactualPair, Dataset, ImportJob, Question


@require_GET
@login_required
def home(request):
    """Each role's starting page: coordinators see the data and recent imports, raters their pool."""
    context = {
        "counts": {
            "datasets": Dataset.objects.count(),
            "questions": Question.objects.count(),
            "pairs": CounterfactualPair.objects.count(),
            "answers": Answer.objects.count(),
        },
        "recent_imports": ImportJob.objects.defer("content")[:5],
    }
    return render(request, "home.html", context)
