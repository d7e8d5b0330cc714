"""GET /v1/problems and /v1/problems/{id}: what a solver may see, nothing more."""

from __future__ import annotations

from fastapi import APIRouter

from jaxjudge import Problem, ProblemError, list_problems, load_problem
from jaxjudge.problems.roots import find_problem_dir
from jaxjudge.service.api.errors import ApiError
from jaxjudge.service.schemas import (
    ErrorBody,
    ExamplePublic,
    LimitsPublic,
    ProblemPublic,
    ProblemSummary,
    RequirementPublic,
    TolerancePublic,
)

router = APIRouter(prefix="/problems", tags=["problems"])


def find_problem(problem_id: str) -> Problem:
    """The problem, or a 404 ApiError. A package that exists but is broken is our fault and
    surfaces as a 500 instead of pretending it does not exist."""
    try:
        return load_problem(problem_id)
    except ProblemError as exc:
        if "/" in problem_id or find_problem_dir(problem_id) is None:
            raise ApiError(404, f"unknown problem {problem_id!r}") from exc
        raise


def _summary(p: Problem) -> ProblemSummary:
    return ProblemSummary(
        id=p.id, title=p.title, difficulty=p.difficulty, tags=p.tags, summary=p.summary
    )


def _public(p: Problem) -> ProblemPublic:
    return ProblemPublic(
        **_summary(p).model_dump(),
        statement=p.statement,
        entry_point=p.entry_point,
        arguments=[a.model_dump(exclude_none=True) for a in p.arguments],
        returns=p.returns,
        constraints=p.constraints.model_dump(),
        limits=LimitsPublic(**p.limits.model_dump()),
        tolerance=TolerancePublic(**p.tolerance.model_dump()),
        scoring=p.scoring.model_dump(),
        requirements=[
            RequirementPublic(name=r.name, level=r.level, description=r.description)
            for r in p.requirements
        ],
        # examples() is the visible tests only; filter again so a hidden case can never leak.
        examples=[
            ExamplePublic(name=c.name, inputs=c.inputs, expected=c.expected, note=c.note)
            for c in p.examples()
            if c.visible
        ],
        starter=p.starter,
    )


@router.get("", response_model=list[ProblemSummary], summary="List problems")
def list_all() -> list[ProblemSummary]:
    return [_summary(p) for p in list_problems()]


@router.get(
    "/{problem_id}",
    response_model=ProblemPublic,
    summary="One problem: statement, examples, limits, requirements, starter code",
    responses={404: {"model": ErrorBody}},
)
def get_one(problem_id: str) -> ProblemPublic:
    return _public(find_problem(problem_id))
