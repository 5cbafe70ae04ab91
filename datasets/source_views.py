"""The model-source pages: list, create, edit, and test the connection (datasets/DESIGN.md, "Source pages")."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from raters.access import coordinator_required

from . import source_pages
from .forms import AnswerSourceForm
from .models import AnswerSource


@require_GET
@coordinator_required
def source_list(request):
    return render(request, "datasets/source_list.html", {"sources": AnswerSource.objects.all()})


@require_http_methods(["GET", "POST"])
@coordinator_required
def source_create(request):
    form = AnswerSourceForm(request.POST or None, initial={"kind": AnswerSource.Kind.MODEL})
    if request.method == "POST" and form.is_valid():
        source = form.save()
        messages.success(request, f"Source “{source.name}” saved. Test its connection below.")
        return redirect("datasets:source", pk=source.pk)
    return _form_page(request, form, None)


@require_http_methods(["GET", "POST"])
@coordinator_required
def source_edit(request, pk):
    source = get_object_or_404(AnswerSource, pk=pk)
    form = AnswerSourceForm(request.POST or None, instance=source)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Saved.")
        return redirect("datasets:source", pk=source.pk)
    return _form_page(request, form, source)


@require_POST
@coordinator_required
def source_test(request, pk):
    """One request with the saved settings; the result is shown on the page (a test changes nothing)."""
    source = get_object_or_404(AnswerSource, pk=pk)
    result = source_pages.check_connection(source)
    return _form_page(request, AnswerSourceForm(instance=source), source, result=result)


def _form_page(request, form, source, *, result=None):
    limit = source_pages.time_limit(source) if source else None
    context = {"form": form, "source": source, "result": result, "test_timeout": limit}
    return render(request, "datasets/source_form.html", context, status=400 if form.errors else 200)
