"""Pages of the study designs (DESIGN.md): prompt recipes with their request preview, and variant runs.

Coordinators only, like the generation pages; thin: forms check, `recipe_pages` and the engines act.
"""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from raters.access import coordinator_required

from . import example_pool, recipe_pages, recipes, variant_pages
from .forms import PromptRecipeForm, RecipeJobForm, RecipePreviewForm, VariantRunForm
from .generation import jobs
from .models import Dataset, PromptRecipe, VariantRun
from .variants import runs as variant_runs

# --- Prompt recipes --------------------------------------------------------------------------------


@require_GET
@coordinator_required
def recipe_list(request):
    recipe_rows = PromptRecipe.objects.select_related("examples_pool").order_by("name")
    return render(request, "datasets/recipe_list.html", {"recipes": recipe_rows})


@require_http_methods(["GET", "POST"])
@coordinator_required
def recipe_create(request):
    return _recipe_form(request, PromptRecipe(created_by=request.user))


@require_http_methods(["GET", "POST"])
@coordinator_required
def recipe_edit(request, pk):
    return _recipe_form(request, get_object_or_404(PromptRecipe, pk=pk))


def _recipe_form(request, recipe):
    creating = recipe.pk is None
    form = PromptRecipeForm(request.POST or None, instance=recipe)
    if request.method == "POST" and form.is_valid():
        recipe = form.save()
        messages.success(request, f"Recipe {recipe.name!r} {'created' if creating else 'saved'}.")
        return redirect("datasets:recipe", pk=recipe.pk)
    context = {"form": form, "recipe": recipe, "creating": creating}
    return render(request, "datasets/recipe_form.html", context, status=400 if form.errors else 200)


@require_GET
@coordinator_required
def recipe_detail(request, pk):
    """The recipe, a preview of the exact request for a chosen question (GET: nothing is sent), and a job form."""
    recipe = get_object_or_404(PromptRecipe.objects.select_related("examples_pool"), pk=pk)
    return _recipe_page(request, recipe, job_form=RecipeJobForm(initial=_job_initial(request)))


@require_POST
@coordinator_required
def recipe_generate(request, pk):
    recipe = get_object_or_404(PromptRecipe, pk=pk)
    form = RecipeJobForm(request.POST)
    running = None
    if form.is_valid():
        try:
            job = jobs.start_job(**form.job_options(), recipe=recipe, user=request.user)
        except jobs.GenerationRefused as refused:
            form.add_error(None, str(refused))
            running = refused.job
        else:
            messages.success(request, f"Job {job.id} started with the recipe {recipe.name!r}.")
            return redirect("datasets:generation_job", pk=job.pk)
    return _recipe_page(request, recipe, job_form=form, running=running, status=400)


def _job_initial(request) -> dict:
    return {"dataset": request.GET.get("dataset"), "source": request.GET.get("source")}


def _recipe_page(request, recipe, *, job_form, running=None, status=200):
    preview_form = RecipePreviewForm(request.GET or None, initial=_preview_initial(recipe), recipe=recipe)
    preview, preview_error = None, None
    if preview_form.is_bound and preview_form.is_valid():
        data = preview_form.cleaned_data
        try:
            preview = recipe_pages.preview(recipe, data["question"], data.get("source"))
        except recipes.RecipeError as error:
            preview_error = str(error)
    context = {
        "recipe": recipe,
        "settings_json": json.dumps(recipe.settings(), indent=2, ensure_ascii=False),
        "preview_form": preview_form,
        "preview": preview,
        "preview_body": json.dumps(preview.request.body, indent=2, ensure_ascii=False) if preview else "",
        "preview_error": preview_error,
        "job_form": job_form,
        "running": running,
        "recent": recipe.generation_jobs.select_related("dataset", "source").order_by("-created_at")[:10],
        "held_out": example_pool.never_evaluated(recipe),
    }
    if preview_form.is_bound and not preview_form.is_valid() or preview_error:
        status = 400
    return render(request, "datasets/recipe_detail.html", context, status=status)


def _preview_initial(recipe) -> dict:
    # The variants of the recipe's pool are a natural first choice; any dataset will do.
    variant_sets = Dataset.objects.filter(variant_runs__isnull=False).order_by("name")
    pool = recipe.examples_pool_id or variant_sets.values_list("pk", flat=True).first()
    return {"dataset": pool}


# --- Variant runs ----------------------------------------------------------------------------------


@require_GET
@coordinator_required
def variant_run_list(request):
    runs = VariantRun.objects.select_related("base_dataset", "dataset").order_by("-created_at", "-id")
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    return render(request, "datasets/variant_run_list.html", {"page": page})


@require_http_methods(["GET", "POST"])
@coordinator_required
def variant_run_create(request):
    form = VariantRunForm(request.POST or None, initial={"base_dataset": request.GET.get("base_dataset")})
    running = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = variant_runs.start_variant_run(
                generator=data["generator"],
                base_dataset=data["base_dataset"],
                seed=data["seed"],
                options=form.run_options(),
                user=request.user,
            )
        except variant_runs.VariantRunRefused as refused:
            form.add_error(None, str(refused))
            running = refused.run
        else:
            messages.success(request, f"Variant run {run.pk} started.")
            return redirect("datasets:variant_run", pk=run.pk)
    context = {"form": form, "running": running}
    return render(request, "datasets/variant_run_form.html", context, status=400 if form.errors else 200)


@require_GET
@coordinator_required
def variant_run_detail(request, pk):
    run = get_object_or_404(VariantRun.objects.select_related("base_dataset", "dataset", "created_by"), pk=pk)
    context = {"run": run, "percent": variant_pages.run_percent(run), "option_rows": variant_pages.option_rows(run)}
    return render(request, "datasets/variant_run.html", context)
