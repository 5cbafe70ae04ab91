"""How a rater enters a study: the crowd-panel link, onboarding (consent with the study's text, then the survey)
and the panel's done page. Their URLs and names stay in the `raters:` namespace (config/urls.py); the logic is
`studies/panel.py`. Here rather than in raters because they read the study, and `raters` never imports `studies`.
"""

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from raters import services as rater_services
from raters.access import rater_profile_or_403
from raters.forms import ConsentForm, DemographicsForm, ExpertBackgroundForm, PanelEntryForm
from raters.models import RaterProfile
from raters.views import ONBOARDING_STUDY, message_page

from . import panel, services
from .models import Study

ONBOARDING_FORMS = {"consent": ConsentForm, "demographics": DemographicsForm, "background": ExpertBackgroundForm}


@require_http_methods(["GET", "POST"])
@login_required
def onboarding(request):
    """Consent (consumers), then the background survey; the step shown follows from what the rater has done."""
    profile = rater_profile_or_403(request.user)
    study = Study.objects.filter(pk=request.session.get(ONBOARDING_STUDY)).first()
    step = rater_services.onboarding_step(profile)
    if step is None:
        return _start_rating(request, profile, study)
    if request.method == "POST" and request.POST.get("step") != step:
        return redirect("raters:onboarding")  # an earlier step's form sent again: show the current step
    form = ONBOARDING_FORMS[step](request.POST or None, initial=_background_initial(profile))
    if request.method == "POST" and form.is_valid():
        _record_step(step, profile, form.cleaned_data)
        if rater_services.onboarding_step(profile) is None:
            return _start_rating(request, profile, study)
        return redirect("raters:onboarding")
    context = {"form": form, "step": step, "study": study, "profile": profile}
    return render(request, "raters/onboarding.html", context)


def _record_step(step: str, profile: RaterProfile, data: dict) -> None:
    if step == "consent":
        rater_services.record_consent(profile=profile)
    elif step == "demographics":
        rater_services.record_demographics(profile=profile, **data)
    else:
        rater_services.record_expert_background(profile=profile, **data)


def _background_initial(profile: RaterProfile) -> dict:
    background = getattr(profile, "background", None)
    if background is None:
        return {}
    fields = ["years_in_practice", "specialty", "country", "qualifications", "age_group", "gender", "race_ethnicity"]
    return {name: getattr(background, name) for name in fields}


def _start_rating(request, profile: RaterProfile, study: Study | None):
    if study is None or profile.pool.slug != rater_services.CONSUMER:
        return redirect("studies:queue")
    if not panel.is_panel_participant_of(profile=profile, study=study):
        panel.draw_study_items(study=study, profile=profile)  # invited consumers: their queue says it all
        return redirect("studies:queue")
    return _panel_next(request, profile, study)


def _panel_next(request, profile: RaterProfile, study: Study):
    """Where a panel participant goes now: their items, their completion code, or an honest explanation."""
    if profile.dropped_out_at is not None:
        text = "The study team has ended your participation in this study. Please contact them with questions."
        return message_page(request, title="Your participation has ended", text=text, status=410)
    progress = panel.draw_study_items(study=study, profile=profile)
    if progress.pending and not study.is_locked:
        first = services.next_assignment(rater=profile, study=study)  # straight to work, not via the queue
        return redirect("studies:rate", first.pk) if first else redirect("studies:queue")
    if progress.complete:
        panel.record_completion(profile=profile)
        context = {"study": study, "return_url": panel.panel_return_url(study)}
        return render(request, "raters/panel_done.html", context)
    if study.is_locked:
        text = "The study closed before you rated every item. Please contact the study team."
        return message_page(request, title="This study has closed", text=text, status=410)
    return _refused(request, panel.STUDY_FULL)


def _refused(request, refusal: panel.PanelRefused):
    response = message_page(request, title=refusal.title, text=refusal.text, status=refusal.status)
    if refusal.retry_after:
        response["Retry-After"] = str(refusal.retry_after)
    return response


@require_GET
def panel_start(request, study_id):
    """The link a crowd panel sends participants to, e.g. /panel/3/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...

    With `resume=<token>` it is a resume link the study team made (see panel.enter_panel).
    """
    study = get_object_or_404(Study, pk=study_id)
    entry = PanelEntryForm(request.GET)
    if not entry.is_valid():
        text = "This link lacks a valid participant id. Please open the study again from the panel's website."
        return message_page(request, title="Participant id missing", text=text, status=400)
    if study.is_locked:
        return message_page(request, title="This study has closed", text="It no longer takes ratings.", status=410)
    if panel.consumer_study_pool(study) is None or not study.items.exists():
        text = "This study is not open to panel participants."
        return message_page(request, title="Not a panel study", text=text, status=404)
    data = entry.cleaned_data
    try:
        profile, sign_in = panel.enter_panel(
            study=study,
            participant_id=data["PROLIFIC_PID"],
            panel_study_id=data["STUDY_ID"],
            panel_session_id=data["SESSION_ID"],
            user=request.user,
            resume_token=data["resume"],
        )
    except panel.PanelRefused as refusal:
        return _refused(request, refusal)
    if sign_in:
        login(request, profile.user)
    request.session[ONBOARDING_STUDY] = study.pk
    if rater_services.onboarding_step(profile) is not None:
        return redirect("raters:onboarding")
    return _panel_next(request, profile, study)


@require_GET
@login_required
def panel_done(request, study_id):
    """The completion code, once every item the participant drew in the study is rated."""
    study = get_object_or_404(Study, pk=study_id)
    profile = rater_profile_or_403(request.user)
    if not panel.is_panel_participant_of(profile=profile, study=study):
        text = "If you came from a panel, open the study again from the panel's website."
        return message_page(request, title="You have no items in this study", text=text, status=403)
    if rater_services.onboarding_step(profile) is not None:
        return redirect("raters:onboarding")
    progress = panel.panel_progress(study=study, profile=profile)
    if progress.pending and not study.is_locked:
        left = progress.pending
        messages.info(request, f"{left} item{'s' if left != 1 else ''} left to rate before you finish.")
        return redirect("studies:queue")
    return _panel_next(request, profile, study)
